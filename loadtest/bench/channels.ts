// bench:channels — many channels, one socket each: what the consumer-free JetStream design costs against the
// Redis pub/sub broker, same run, fresh servers for each. Per broker: N sockets (over several client
// processes and loopback destination addresses) each subscribe to their own channel user.<i>; subscribe-ack
// latency and errors; then 10 s idle: CPU% of the gateway (primary + workers) and of the broker process, RSS,
// and the broker's memory growth per channel; then messages published over HTTP to random channels:
// delivery latency (receive time minus the frame's broker ts) and delivered/expected; the stream's consumer
// count (sampled every second and at the end; must stay 0).
// Usage: npm run bench -- channels [--channels 10000 | --quick] [--messages 2000] [--rate 500]
//   [--idle 10] [--workers auto] [--procs auto] [--brokers jetstream,redis] [--rounds 1] [--no-write]
// --rounds R runs both brokers R times, alternating which goes first (the first run of a pair met a colder
// box: its sub-ack ratio moved by 2x with the order alone); tables show the round whose subscribe-ack
// ratio is the median, and every round's ratios are listed.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type WebSocket from "ws";
import { fmt } from "./common.js";
import { httpPublisher } from "./http-publisher.js";
import { std } from "../kit/flags.js";
import { defineBench, KEEP_RUNNING, runBench } from "../kit/main.js";
import { appendSection, reportPath } from "../kit/results.js";
import { alternate, medianIndex, runRounds } from "../kit/rounds.js";
import { startNatsServer } from "#testkit/nats-server.js";
import {
  clientLifecycle,
  closeAll,
  forkClient,
  frameSeq,
  frameTs,
  gatewayPids,
  gatewayWarnings,
  groupStat,
  isMsgFrame,
  loadAvg,
  now,
  openSockets,
  pcts,
  procStat,
  revision,
  rng,
  scrapeMetrics,
  sleep,
  startRedis,
  startScaleGateway,
  stopClients,
  type ClientProc,
  type Pcts,
} from "./scale-kit.js";

// ---------------------------------------------------------------- client process

type Subscribed = {
  type: "subscribed";
  opened: number;
  failed: number;
  failures: string[];
  acked: number;
  ackMs: number[];
  errFrames: number;
  errSamples: string[];
  unexpectedCloses: number;
  openMs: number;
};
type Progress = { type: "progress"; received: number };
type Report = {
  type: "report";
  received: number;
  dups: number;
  wrongChannel: number;
  latMs: number[];
  errFrames: number;
  errSamples: string[];
  unexpectedCloses: number;
  closeCodes: Record<string, number>;
};

async function clientMain(port: number, first: number, count: number, dests: number, concurrency: number): Promise<void> {
  const tSub = new Float64Array(count);
  const ackMs: number[] = [];
  const last = new Float64Array(count);
  const chanBytes = (k: number): Buffer => Buffer.from(`"channel":"user.${first + k}"`);
  let acked = 0;
  let settled = 0;
  let errFrames = 0;
  const errSamples: string[] = [];
  let unexpectedCloses = 0;
  const closeCodes: Record<string, number> = {};
  let received = 0;
  let dups = 0;
  let wrongChannel = 0;
  let latMs: number[] = [];
  let sockets: (WebSocket | undefined)[] = [];
  clientLifecycle(() => closeAll(sockets));

  const onFrame = (k: number, d: Buffer): void => {
    if (isMsgFrame(d)) {
      const t = now();
      received++;
      latMs.push(t - frameTs(d));
      const seq = frameSeq(d);
      if (seq <= last[k]!) dups++;
      else last[k] = seq;
      if (d.indexOf(chanBytes(k)) < 0) wrongChannel++;
      return;
    }
    let f: { op?: string; id?: unknown; code?: string; message?: string };
    try {
      f = JSON.parse(d.toString()) as typeof f;
    } catch {
      f = { op: "?" };
    }
    if (f.op === "ok" && f.id === 1) {
      ackMs.push(now() - tSub[k]!);
      acked++;
      settled++;
    } else if (f.op === "err") {
      errFrames++;
      if (errSamples.length < 5) errSamples.push(d.toString().slice(0, 300));
      if (f.id === 1) settled++;
    }
  };
  const res = await openSockets({
    port,
    count,
    base: first,
    dests,
    concurrency,
    onOpen: (ws, k) => {
      ws.on("message", (d: Buffer) => onFrame(k, d));
      tSub[k] = now();
      ws.send(`{"op":"sub","id":1,"channel":"user.${first + k}"}`);
    },
    onUnexpectedClose: (_k, code) => {
      unexpectedCloses++;
      closeCodes[code] = (closeCodes[code] ?? 0) + 1;
    },
  });
  sockets = res.sockets;
  const opened = count - res.failed;
  // Every opened socket gets its ok or err; bounded wait.
  const deadline = Date.now() + 60_000;
  while (settled < opened && Date.now() < deadline) await sleep(20);
  const sub: Subscribed = {
    type: "subscribed",
    opened,
    failed: res.failed,
    failures: res.failures,
    acked,
    ackMs,
    errFrames,
    errSamples,
    unexpectedCloses,
    openMs: res.ms,
  };
  process.send!(sub);
  process.on("message", (m: { type: string }) => {
    if (m.type === "progress") process.send!({ type: "progress", received } satisfies Progress);
    if (m.type === "report") {
      process.send!({ type: "report", received, dups, wrongChannel, latMs, errFrames, errSamples, unexpectedCloses, closeCodes } satisfies Report);
      latMs = [];
    }
  });
}

// ---------------------------------------------------------------- main

type BrokerKind = "jetstream" | "redis";

type RunResult = {
  broker: BrokerKind;
  channels: number;
  workers: number;
  procs: number;
  dests: number;
  subscribeSeconds: number;
  opened: number;
  failedConnects: number;
  connectFailures: string[];
  acked: number;
  errFrames: number;
  errSamples: string[];
  unexpectedCloses: number;
  closeCodes: Record<string, number>;
  ackMs: Pcts;
  gateway: { processes: number; rssBefore: number; rssAfterSubscribe: number; rssAfterIdle: number; cpuSecSubscribe: number; idleCpuPct: number };
  brokerProc: { rssBefore: number; rssAfterSubscribe: number; rssAfterIdle: number; cpuSecSubscribe: number; idleCpuPct: number; growthPerChannel: number };
  metricsAfterSubscribe: { connections: number; subscriptions: number; liveFeeds: number; natsServerSubscriptions?: number };
  publish: { attempted: number; ok: number; failed: number; failSamples: string[]; seconds: number };
  delivery: { expected: number; delivered: number; dups: number; wrongChannel: number; latMs: Pcts };
  consumers?: { end: number; max: number; samples: number; failedSamples: number };
  repairs: number;
  workerRestarts: number;
  warnings: { msg: string; count: number; sample: string }[];
};

/** Publishes `total` messages over HTTP at `rate`/s to channels picked by `pick`; counts 201s. */
async function httpPublish(port: number, total: number, rate: number, pick: () => string): Promise<RunResult["publish"]> {
  const pub = httpPublisher(`http://127.0.0.1:${port}`);
  let ok = 0;
  let failed = 0;
  const failSamples: string[] = [];
  const inflight = new Set<Promise<void>>();
  const one = (channel: string, n: number): Promise<void> =>
    pub.publish(channel, `{"n":${n},"t":${Date.now()}}`).then(
      (r) => {
        if (r.status === 201) ok++;
        else {
          failed++;
          if (failSamples.length < 5) failSamples.push(`${r.status} ${r.text.slice(0, 200)}`);
        }
      },
      (e: Error) => {
        failed++;
        if (failSamples.length < 5) failSamples.push(e.message);
      },
    );
  const perTick = Math.max(1, Math.round(rate / 100));
  const tickMs = rate >= 100 ? 10 : 1000 / rate;
  const t0 = now();
  let sent = 0;
  const deadline = Date.now() + (total / rate) * 1000 + 30_000;
  while (sent < total && Date.now() < deadline) {
    const due = Math.min(total, Math.floor(((now() - t0) / tickMs + 1) * perTick));
    while (sent < due && inflight.size < 512) {
      const p = one(pick(), sent++);
      inflight.add(p);
      void p.then(() => inflight.delete(p));
    }
    await sleep(tickMs);
  }
  await Promise.all(inflight);
  pub.close();
  return { attempted: sent, ok, failed, failSamples, seconds: (now() - t0) / 1000 };
}

async function run(
  kind: BrokerKind,
  o: { channels: number; workers: number; procs: number; idle: number; messages: number; rate: number; concurrency: number },
): Promise<RunResult> {
  const log = (s: string): void => console.log(`[${kind}] ${s}`);
  const dests = Math.max(2, Math.ceil(o.channels / 10_000));
  // Broker and gateway, fresh.
  const nats = kind === "jetstream" ? await startNatsServer() : undefined;
  const redis = kind === "redis" ? await startRedis() : undefined;
  const brokerPid = (nats?.process.pid ?? redis?.proc.pid)!;
  const gw = await startScaleGateway({
    natsUrl: nats?.url,
    workers: o.workers,
    extra: kind === "redis" ? ["--broker", "redis", "--redis-url", redis!.url] : [],
  });
  const clients: ClientProc[] = [];
  let nc: NatsConnection | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    const gwPids = gatewayPids(gw);
    if (gwPids.length !== o.workers + 1) log(`warning: ${gwPids.length} gateway processes, expected ${o.workers + 1}`);
    // Consumers on the stream: sampled every second from now on, and at the end.
    let jsm: JetStreamManager | undefined;
    const consumers = { end: -1, max: 0, samples: 0, failedSamples: 0 };
    const sampleConsumers = async (): Promise<number | undefined> => {
      try {
        const n = (await jsm!.streams.info("FANOUT_CHANNELS")).state.consumer_count;
        consumers.samples++;
        consumers.max = Math.max(consumers.max, n);
        return n;
      } catch {
        consumers.failedSamples++;
        return undefined;
      }
    };
    if (nats) {
      nc = await connect({ servers: nats.url, name: "bench-channels" });
      jsm = await jetstreamManager(nc);
      let busy = false;
      sampler = setInterval(() => {
        if (busy) return;
        busy = true;
        void sampleConsumers().finally(() => (busy = false));
      }, 1_000);
    }
    await sleep(1_000); // the gateway's connections and stream set-up settle
    const gwBefore = groupStat(gwPids);
    const brBefore = procStat(brokerPid)!;

    // Subscribe: every client process opens its share of sockets and subscribes each at once.
    log(`${fmt(o.channels)} sockets over ${o.procs} client processes, ${dests} destination addresses, ${o.concurrency} handshakes in flight per process`);
    const t0 = now();
    const per = Math.ceil(o.channels / o.procs);
    for (let p = 0; p < o.procs; p++) {
      const first = p * per;
      const count = Math.min(per, o.channels - first);
      if (count <= 0) break;
      clients.push(
        forkClient(process.argv[1]!, [
          "--role",
          "client",
          "--port",
          String(gw.port),
          "--first",
          String(first),
          "--count",
          String(count),
          "--dests",
          String(dests),
          "--concurrency",
          String(o.concurrency),
        ]),
      );
    }
    const subs = await Promise.all(clients.map((c) => c.ask<Subscribed>({}, "subscribed", 300_000)));
    const subscribeSeconds = (now() - t0) / 1000;
    const gwSub = groupStat(gwPids);
    const brSub = procStat(brokerPid)!;
    const opened = subs.reduce((a, s) => a + s.opened, 0);
    const acked = subs.reduce((a, s) => a + s.acked, 0);
    log(`subscribed: ${fmt(acked)} ok of ${fmt(opened)} opened in ${subscribeSeconds.toFixed(1)} s`);
    const m = await scrapeMetrics(gw.url);
    let natsServerSubscriptions: number | undefined;
    if (nats) {
      try {
        natsServerSubscriptions = ((await (await fetch(`http://127.0.0.1:${nats.monitorPort}/varz`)).json()) as { subscriptions: number }).subscriptions;
      } catch {
        /* left out */
      }
    }

    // Idle.
    log(`idle ${o.idle} s`);
    const tIdle = now();
    const gwI0 = groupStat(gwPids);
    const brI0 = procStat(brokerPid)!;
    await sleep(o.idle * 1000);
    const gwI1 = groupStat(gwPids);
    const brI1 = procStat(brokerPid)!;
    const idleSec = (now() - tIdle) / 1000;

    // Publish to random channels over HTTP (the path both brokers share).
    log(`publishing ${fmt(o.messages)} messages at ${o.rate}/s over HTTP to random channels`);
    const pick = rng(42);
    const pub = await httpPublish(gw.port, o.messages, o.rate, () => `user.${Math.floor(pick() * o.channels)}`);
    const waitUntil = Date.now() + 15_000;
    for (;;) {
      const got = (await Promise.all(clients.map((c) => c.ask<Progress>({ type: "progress" }, "progress", 10_000)))).reduce((a, r) => a + r.received, 0);
      if (got >= pub.ok || Date.now() > waitUntil) break;
      await sleep(200);
    }
    const reps = await Promise.all(clients.map((c) => c.ask<Report>({ type: "report" }, "report", 30_000)));
    const end = nats ? await sampleConsumers() : undefined;
    consumers.end = end ?? -1;
    const mEnd = await scrapeMetrics(gw.url);
    const closeCodes: Record<string, number> = {};
    for (const r of reps) for (const [c, n] of Object.entries(r.closeCodes)) closeCodes[c] = (closeCodes[c] ?? 0) + n;
    return {
      broker: kind,
      channels: o.channels,
      workers: o.workers,
      procs: clients.length,
      dests,
      subscribeSeconds,
      opened,
      failedConnects: subs.reduce((a, s) => a + s.failed, 0),
      connectFailures: subs.flatMap((s) => s.failures).slice(0, 5),
      acked,
      errFrames: reps.reduce((a, r) => a + r.errFrames, 0),
      errSamples: reps.flatMap((r) => r.errSamples).slice(0, 5),
      unexpectedCloses: reps.reduce((a, r) => a + r.unexpectedCloses, 0),
      closeCodes,
      ackMs: pcts(subs.flatMap((s) => s.ackMs)),
      gateway: {
        processes: gwPids.length,
        rssBefore: gwBefore.rssBytes,
        rssAfterSubscribe: gwSub.rssBytes,
        rssAfterIdle: gwI1.rssBytes,
        cpuSecSubscribe: gwSub.cpuSec - gwBefore.cpuSec,
        idleCpuPct: ((gwI1.cpuSec - gwI0.cpuSec) / idleSec) * 100,
      },
      brokerProc: {
        rssBefore: brBefore.rssBytes,
        rssAfterSubscribe: brSub.rssBytes,
        rssAfterIdle: brI1.rssBytes,
        cpuSecSubscribe: brSub.cpuSec - brBefore.cpuSec,
        idleCpuPct: ((brI1.cpuSec - brI0.cpuSec) / idleSec) * 100,
        growthPerChannel: (brSub.rssBytes - brBefore.rssBytes) / o.channels,
      },
      metricsAfterSubscribe: {
        connections: m.fanout_connections ?? NaN,
        subscriptions: m.fanout_subscriptions ?? NaN,
        liveFeeds: m.fanout_live_feeds ?? NaN,
        natsServerSubscriptions,
      },
      publish: pub,
      delivery: {
        expected: pub.ok,
        delivered: reps.reduce((a, r) => a + r.received, 0),
        dups: reps.reduce((a, r) => a + r.dups, 0),
        wrongChannel: reps.reduce((a, r) => a + r.wrongChannel, 0),
        latMs: pcts(reps.flatMap((r) => r.latMs)),
      },
      consumers: nats ? consumers : undefined,
      repairs: mEnd.fanout_live_repairs_total ?? 0,
      workerRestarts: mEnd.fanout_worker_restarts_total ?? 0,
      warnings: gatewayWarnings(gw, [/AUTHENTICATION IS OFF/]),
    };
  } finally {
    if (sampler) clearInterval(sampler);
    await stopClients(clients);
    await nc?.close().catch(() => undefined);
    await gw.stop();
    await nats?.stop();
    await redis?.stop();
  }
}

const MB = (b: number): string => fmt(b / 1048576, 1);
const ms = (v: number): string => (Number.isFinite(v) ? fmt(v, 2) : "—");
const ratio = (a: number, b: number): string => (b > 0 ? (a / b).toFixed(2) : "—");

/** Failed connects, err frames, unexpected closes, and opened sockets that got neither ok nor err. */
const errs = (r: RunResult): number => r.failedConnects + r.errFrames + r.unexpectedCloses + Math.max(0, r.opened - r.acked - r.errFrames);

function table(js: RunResult, rd: RunResult): string {
  const rows: [string, string, string, string][] = [
    [
      "sockets subscribed (ok / opened / asked)",
      `${fmt(js.acked)} / ${fmt(js.opened)} / ${fmt(js.channels)}`,
      `${fmt(rd.acked)} / ${fmt(rd.opened)} / ${fmt(rd.channels)}`,
      "",
    ],
    ["errors (failed connects + err frames + unexpected closes + no ack)", fmt(errs(js)), fmt(errs(rd)), ""],
    ["connect + subscribe, all sockets (s)", fmt(js.subscribeSeconds, 1), fmt(rd.subscribeSeconds, 1), ratio(js.subscribeSeconds, rd.subscribeSeconds)],
    ["subscribe-ack p50 (ms)", ms(js.ackMs.p50), ms(rd.ackMs.p50), ratio(js.ackMs.p50, rd.ackMs.p50)],
    ["subscribe-ack p99 (ms)", ms(js.ackMs.p99), ms(rd.ackMs.p99), ratio(js.ackMs.p99, rd.ackMs.p99)],
    ["subscribe-ack max (ms)", ms(js.ackMs.max), ms(rd.ackMs.max), ratio(js.ackMs.max, rd.ackMs.max)],
    [
      "CPU-s while subscribing: gateway / broker",
      `${fmt(js.gateway.cpuSecSubscribe, 2)} / ${fmt(js.brokerProc.cpuSecSubscribe, 2)}`,
      `${fmt(rd.gateway.cpuSecSubscribe, 2)} / ${fmt(rd.brokerProc.cpuSecSubscribe, 2)}`,
      ratio(js.gateway.cpuSecSubscribe + js.brokerProc.cpuSecSubscribe, rd.gateway.cpuSecSubscribe + rd.brokerProc.cpuSecSubscribe),
    ],
    [
      "idle CPU % gateway (primary + workers)",
      fmt(js.gateway.idleCpuPct, 2),
      fmt(rd.gateway.idleCpuPct, 2),
      ratio(js.gateway.idleCpuPct, rd.gateway.idleCpuPct),
    ],
    [
      "idle CPU % broker (nats-server / redis-server)",
      fmt(js.brokerProc.idleCpuPct, 2),
      fmt(rd.brokerProc.idleCpuPct, 2),
      ratio(js.brokerProc.idleCpuPct, rd.brokerProc.idleCpuPct),
    ],
    [
      "**idle CPU % gateway + broker**",
      fmt(js.gateway.idleCpuPct + js.brokerProc.idleCpuPct, 2),
      fmt(rd.gateway.idleCpuPct + rd.brokerProc.idleCpuPct, 2),
      ratio(js.gateway.idleCpuPct + js.brokerProc.idleCpuPct, rd.gateway.idleCpuPct + rd.brokerProc.idleCpuPct),
    ],
    [
      "RSS gateway before → after subscribe → after idle (MB)",
      `${MB(js.gateway.rssBefore)} → ${MB(js.gateway.rssAfterSubscribe)} → ${MB(js.gateway.rssAfterIdle)}`,
      `${MB(rd.gateway.rssBefore)} → ${MB(rd.gateway.rssAfterSubscribe)} → ${MB(rd.gateway.rssAfterIdle)}`,
      ratio(js.gateway.rssAfterSubscribe, rd.gateway.rssAfterSubscribe),
    ],
    [
      "RSS broker before → after subscribe → after idle (MB)",
      `${MB(js.brokerProc.rssBefore)} → ${MB(js.brokerProc.rssAfterSubscribe)} → ${MB(js.brokerProc.rssAfterIdle)}`,
      `${MB(rd.brokerProc.rssBefore)} → ${MB(rd.brokerProc.rssAfterSubscribe)} → ${MB(rd.brokerProc.rssAfterIdle)}`,
      ratio(js.brokerProc.rssAfterSubscribe, rd.brokerProc.rssAfterSubscribe),
    ],
    ["broker memory growth per channel (bytes)", fmt(js.brokerProc.growthPerChannel), fmt(rd.brokerProc.growthPerChannel), ""],
    [
      "gateway: connections / subscriptions / live feeds",
      `${fmt(js.metricsAfterSubscribe.connections)} / ${fmt(js.metricsAfterSubscribe.subscriptions)} / ${fmt(js.metricsAfterSubscribe.liveFeeds)}`,
      `${fmt(rd.metricsAfterSubscribe.connections)} / ${fmt(rd.metricsAfterSubscribe.subscriptions)} / ${fmt(rd.metricsAfterSubscribe.liveFeeds)}`,
      "",
    ],
    [
      "nats-server subscriptions (/varz)",
      js.metricsAfterSubscribe.natsServerSubscriptions !== undefined ? fmt(js.metricsAfterSubscribe.natsServerSubscriptions) : "—",
      "—",
      "",
    ],
    [
      "HTTP publishes ok / sent (s)",
      `${fmt(js.publish.ok)} / ${fmt(js.publish.attempted)} (${fmt(js.publish.seconds, 1)})`,
      `${fmt(rd.publish.ok)} / ${fmt(rd.publish.attempted)} (${fmt(rd.publish.seconds, 1)})`,
      "",
    ],
    [
      "delivered / expected (dups, wrong channel)",
      `${fmt(js.delivery.delivered)} / ${fmt(js.delivery.expected)} (${js.delivery.dups}, ${js.delivery.wrongChannel})`,
      `${fmt(rd.delivery.delivered)} / ${fmt(rd.delivery.expected)} (${rd.delivery.dups}, ${rd.delivery.wrongChannel})`,
      "",
    ],
    ["delivery latency p50 (ms)", ms(js.delivery.latMs.p50), ms(rd.delivery.latMs.p50), ratio(js.delivery.latMs.p50, rd.delivery.latMs.p50)],
    ["delivery latency p99 (ms)", ms(js.delivery.latMs.p99), ms(rd.delivery.latMs.p99), ratio(js.delivery.latMs.p99, rd.delivery.latMs.p99)],
    [
      "JetStream consumers: end / max of samples (samples)",
      js.consumers ? `${js.consumers.end} / ${js.consumers.max} (${js.consumers.samples})` : "—",
      "—",
      "",
    ],
    ["live repairs / worker restarts", `${js.repairs} / ${js.workerRestarts}`, `${rd.repairs} / ${rd.workerRestarts}`, ""],
  ];
  const head = "| | gateway on JetStream | gateway on Redis pub/sub | JetStream / Redis |\n|---|---:|---:|---:|";
  return [head, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

function targets(js: RunResult, rd: RunResult): { text: string; pass: boolean } {
  const idle = (js.gateway.idleCpuPct + js.brokerProc.idleCpuPct) / (rd.gateway.idleCpuPct + rd.brokerProc.idleCpuPct);
  const growth = js.brokerProc.growthPerChannel;
  const ack = js.ackMs.p50 / rd.ackMs.p50;
  const errors = errs(js);
  const lines = [
    [`(gateway + nats-server idle CPU) / (gateway + redis-server idle CPU)`, Number.isFinite(idle) ? idle.toFixed(2) : "—", "≤ 1.5", idle <= 1.5],
    [`nats-server memory growth per channel`, `${fmt(growth)} B`, "≤ 2,048 B", growth <= 2048],
    [`subscribe-ack p50, JetStream / Redis`, ack.toFixed(2), "≤ 1.5", ack <= 1.5],
    [`errors on JetStream at ${fmt(js.channels)} channels`, fmt(errors), "0 (target stated for 50,000)", errors === 0],
    [`JetStream consumers (end, max sampled)`, `${js.consumers?.end}, ${js.consumers?.max}`, "0", js.consumers?.end === 0 && js.consumers.max === 0],
    [
      `delivered / expected on JetStream`,
      `${fmt(js.delivery.delivered)} / ${fmt(js.delivery.expected)}`,
      "all, no duplicate",
      js.delivery.delivered === js.delivery.expected && js.delivery.dups === 0,
    ],
  ] as const;
  const text = [
    "| target | measured | wanted | met |\n|---|---:|---|---|",
    ...lines.map(([a, b, c, d]) => `| ${a} | ${b} | ${c} | ${d ? "yes" : "**no**"} |`),
  ].join("\n");
  return { text, pass: lines.every((l) => l[3]) };
}

const BENCH = defineBench("channels", {
  channels: { type: "number", integer: true, min: 1, max: 200_000, default: 10_000, quick: 2_000, help: "channels, one socket each" },
  messages: std("messages", { default: 2000, help: "HTTP publishes to random channels" }),
  rate: std("rate", { default: 500, help: "HTTP publishes per second" }),
  idle: { type: "number", min: 0, default: 10, help: "seconds of the idle window (CPU measured)" },
  concurrency: { type: "number", integer: true, min: 1, default: 500, help: "sockets opening at once per client process" },
  workers: std("workers", { help: "gateway workers (default: one per 12,500 channels, at least 2)" }),
  procs: std("procs", { help: "client processes (default: one per 10,000 channels, at least 2)" }),
  brokers: { type: "list", default: ["jetstream", "redis"], choices: ["jetstream", "redis"], help: "the brokers compared, in round 1's order" },
  rounds: std("rounds", { default: 1, max: 20 }),
  out: std("out", { help: "the results file a run's section is appended to (default loadtest/results/channels.md)" }),
  "no-write": std("no-write"),
  quick: std("quick"),
  role: { type: "string", default: "main", choices: ["main", "client"], internal: true, help: "the process's part" },
  port: { type: "number", internal: true, help: "client: the gateway's port" },
  first: { type: "number", internal: true, help: "client: its first channel" },
  count: { type: "number", internal: true, help: "client: its channels" },
  dests: { type: "number", internal: true, help: "client: source addresses" },
});

runBench(BENCH, async ({ flags: v }) => {
  if (v.role === "client") return clientMain(v.port!, v.first!, v.count!, v.dests!, v.concurrency).then(() => KEEP_RUNNING);
  const { channels, rounds } = v;
  // A worker holds at most ~15,000 sockets and a client process ~12,000 (20,000 open files per process).
  const workers = v.workers ?? Math.max(2, Math.ceil(channels / 12_500));
  const procs = v.procs ?? Math.max(2, Math.ceil(channels / 10_000));
  const o = { channels, workers, procs, idle: v.idle, messages: v.messages, rate: v.rate, concurrency: v.concurrency };
  const results = reportPath(v, "channels.md");
  const kinds = v.brokers as BrokerKind[];
  const load0 = loadAvg();
  const started = new Date();
  const all = await runRounds({ rounds }, async (r) => {
    const round: RunResult[] = [];
    for (const k of alternate(kinds, r)) round.push(await run(k, o));
    return round;
  });
  const ackRatio = (round: RunResult[]): number => {
    const j = round.find((x) => x.broker === "jetstream");
    const d = round.find((x) => x.broker === "redis");
    return j && d ? j.ackMs.p50 / d.ackMs.p50 : NaN;
  };
  const median = { i: medianIndex(all.map(ackRatio)) };
  const shown = all[median.i]!;
  const roundsLine =
    rounds > 1
      ? `Rounds (order alternating, ${kinds.join(" first, then ")} first in round 1): subscribe-ack p50 JetStream / Redis ${all.map((round, i) => `${ackRatio(round).toFixed(2)} (round ${i + 1})`).join(", ")}; tables from round ${median.i + 1}, the median.`
      : "";
  const js = shown.find((r) => r.broker === "jetstream");
  const rd = shown.find((r) => r.broker === "redis");
  const header = `bench:channels — ${fmt(channels)} channels, one socket each (${procs} client processes), gateway ${workers} workers, ${revision()}; idle ${o.idle} s; ${fmt(o.messages)} HTTP publishes at ${o.rate}/s to random channels. Load average before: ${load0}, after: ${loadAvg()}.`;
  console.log(`\n${header}`);
  for (const r of shown) {
    if (r.connectFailures.length) console.log(`[${r.broker}] connect failures: ${r.connectFailures.join("; ")}`);
    if (r.errSamples.length) console.log(`[${r.broker}] err frames: ${r.errSamples.join(" ")}`);
    if (Object.keys(r.closeCodes).length) console.log(`[${r.broker}] unexpected closes by code: ${JSON.stringify(r.closeCodes)}`);
    if (r.publish.failSamples.length) console.log(`[${r.broker}] failed publishes: ${r.publish.failSamples.join("; ")}`);
    for (const w of r.warnings) console.log(`[${r.broker}] gateway log x${w.count}: ${w.sample}`);
  }
  if (!js || !rd) {
    console.log(JSON.stringify(shown, null, 1));
    return 0;
  }
  const t = table(js, rd);
  const tg = targets(js, rd);
  console.log(`\n${t}\n\n${tg.text}\n${roundsLine ? `\n${roundsLine}\n` : ""}`);
  if (results) {
    const json = JSON.stringify(
      {
        started: started.toISOString(),
        channels,
        workers,
        procs,
        idleSeconds: o.idle,
        messages: o.messages,
        rate: o.rate,
        loadBefore: load0,
        medianRound: median.i + 1,
        rounds: all,
      },
      null,
      1,
    );
    appendSection(
      results,
      "# bench:channels — many channels, one socket each: JetStream (consumer-free) vs Redis pub/sub\n\nWritten by `npm run bench -- channels`; one section per run, newest last. Idle CPU is utime+stime from /proc over the idle window (100% = one core).",
      `## ${started.toISOString().slice(0, 16).replace("T", " ")} UTC — ${fmt(channels)} channels\n\n${header}\n\n${t}\n\n${tg.text}${roundsLine ? `\n\n${roundsLine}` : ""}\n\n<details><summary>JSON</summary>\n\n\`\`\`json\n${json}\n\`\`\`\n</details>`,
    );
  }
});
