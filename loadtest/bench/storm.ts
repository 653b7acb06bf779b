// bench:storm — a reconnect storm: S sockets subscribe at once with a start position 100 messages back while
// a publisher keeps publishing; every socket must get every message of its channel from that position to the
// end of publishing once, in order (checked against the stream sequences the publishes were acknowledged
// with), and the stream must never have a consumer (sampled every 250 ms throughout).
// Case 1: one channel with 1,000 stored messages, every socket from lastSeq-99. Case 2: 1,000 channels with
// 110 stored messages each, sockets spread over them equally, each from its channel's 100th-last message.
// Usage: npm run bench -- storm [--sockets 10000 | --quick] [--rate 50] [--history 1000] [--back 100]
//   [--channels 1000] [--tail 2] [--max-seconds 120] [--workers auto] [--procs auto] [--cases one,many] [--no-write]
import { connect, createInbox, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import type WebSocket from "ws";
import { fmt } from "./common.js";
import { FlagError, std } from "../kit/flags.js";
import { defineBench, KEEP_RUNNING, runBench } from "../kit/main.js";
import { appendSection, reportPath } from "../kit/results.js";
import { startNatsServer } from "#testkit/nats-server.js";
import {
  clientLifecycle,
  closeAll,
  forkClient,
  frameSeq,
  gatewayWarnings,
  isMsgFrame,
  loadAvg,
  now,
  openSockets,
  pcts,
  rng,
  scrapeMetrics,
  sleep,
  revision,
  startScaleGateway,
  stopClients,
  type ClientProc,
  type Pcts,
} from "./scale-kit.js";

// ---------------------------------------------------------------- client process

/** Which channel socket k (global index) uses, and from where. */
type Plan = { type: "plan"; base: number; count: number; channels: string[]; from: number[] };
type Connected = { type: "connected"; opened: number; failed: number; failures: string[]; ms: number };
type Status = { type: "status"; live: number; settled: number; errFrames: number; received: number; maxLiveAt: number };
type Verified = {
  type: "verified";
  waitedMs: number;
  complete: number;
  ok: number;
  bad: number;
  missing: number;
  extra: number;
  duplicates: number;
  outOfOrder: number;
  liveSeqWrong: number;
  notLive: number;
  truncatedOk: number;
  received: number;
  subToLiveMs: number[];
  subToOkMs: number[];
  maxLiveAt: number;
  errFrames: number;
  errSamples: string[];
  unexpectedCloses: number;
  closeCodes: Record<string, number>;
  badSamples: string[];
};

async function clientMain(port: number, dests: number, concurrency: number): Promise<void> {
  let sockets: (WebSocket | undefined)[] = [];
  clientLifecycle(() => closeAll(sockets));
  const plan = await new Promise<Plan>((res) => {
    const h = (m: { type: string }): void => {
      if (m.type === "plan") {
        process.off("message", h);
        res(m as Plan);
      }
    };
    process.on("message", h);
    process.send!({ type: "ready" });
  });
  const n = plan.count;
  const chanOf = (k: number): string => plan.channels[(plan.base + k) % plan.channels.length]!;
  const fromOf = (k: number): number => plan.from[(plan.base + k) % plan.channels.length]!;
  const tSub = new Float64Array(n);
  const tOk = new Float64Array(n);
  const tLive = new Float64Array(n);
  const liveSeq = new Float64Array(n).fill(-1);
  const lastBeforeLive = new Float64Array(n);
  const last = new Float64Array(n);
  const disorder = new Uint32Array(n);
  const ended = new Uint8Array(n);
  const recv: number[][] = Array.from({ length: n }, () => []);
  let live = 0;
  let settled = 0;
  let errFrames = 0;
  const errSamples: string[] = [];
  let unexpectedCloses = 0;
  const closeCodes: Record<string, number> = {};
  let received = 0;
  let truncatedOk = 0;
  let maxLiveAt = 0;

  const onFrame = (k: number, d: Buffer): void => {
    if (isMsgFrame(d)) {
      const seq = frameSeq(d);
      received++;
      recv[k]!.push(seq);
      if (seq <= last[k]!) disorder[k]!++;
      else last[k] = seq;
      return;
    }
    let f: { op?: string; id?: unknown; seq?: number; truncated?: boolean };
    try {
      f = JSON.parse(d.toString()) as typeof f;
    } catch {
      f = { op: "?" };
    }
    if (f.op === "ok" && f.id === 1) {
      tOk[k] = now();
      if (f.truncated) truncatedOk++;
    } else if (f.op === "live" && !ended[k]) {
      const t = now();
      tLive[k] = t;
      maxLiveAt = Math.max(maxLiveAt, t);
      liveSeq[k] = f.seq ?? -1;
      lastBeforeLive[k] = last[k]!;
      live++;
      settled++;
    } else if (f.op === "err") {
      errFrames++;
      if (errSamples.length < 5) errSamples.push(d.toString().slice(0, 300));
      // A sub refused (err with id 1) or a catch-up given up (err without id) ends this socket's one subscription.
      if (tLive[k] === 0 && !ended[k]) {
        ended[k] = 1;
        settled++;
      }
    }
  };

  const res = await openSockets({
    port,
    count: n,
    base: plan.base,
    dests,
    concurrency,
    onOpen: (ws, k) => ws.on("message", (d: Buffer) => onFrame(k, d)),
    onUnexpectedClose: (_k, code) => {
      unexpectedCloses++;
      closeCodes[code] = (closeCodes[code] ?? 0) + 1;
    },
  });
  sockets = res.sockets;
  process.send!({ type: "connected", opened: n - res.failed, failed: res.failed, failures: res.failures, ms: res.ms } satisfies Connected);

  process.on("message", (m: { type: string; expected?: Record<string, number[]>; waitMs?: number }) => {
    if (m.type === "go") {
      // Everyone at once: one synchronous loop over this process's sockets.
      for (let k = 0; k < n; k++) {
        const ws = sockets[k];
        if (!ws) continue;
        tSub[k] = now();
        ws.send(`{"op":"sub","id":1,"channel":"${chanOf(k)}","from":{"seq":${fromOf(k)}}}`);
      }
    } else if (m.type === "status") {
      process.send!({ type: "status", live, settled, errFrames, received, maxLiveAt } satisfies Status);
    } else if (m.type === "verify") {
      void verify(m.expected!, m.waitMs!);
    }
  });

  async function verify(expected: Record<string, number[]>, waitMs: number): Promise<void> {
    const t0 = Date.now();
    const expLast = (k: number): number => expected[chanOf(k)]!.at(-1) ?? 0;
    const done = (k: number): boolean => !sockets[k] || last[k]! >= expLast(k);
    // Wait until every open socket has reached its channel's last published sequence, while frames keep
    // coming: at most `waitMs`, and no more than 15 s without a new frame.
    let seen = received;
    let progressAt = Date.now();
    for (;;) {
      let all = true;
      for (let k = 0; k < n && all; k++) all = done(k);
      if (all || Date.now() - t0 > waitMs || Date.now() - progressAt > 15_000) break;
      await sleep(100);
      if (received !== seen) {
        seen = received;
        progressAt = Date.now();
      }
    }
    const v: Verified = {
      type: "verified",
      waitedMs: Date.now() - t0,
      complete: 0,
      ok: 0,
      bad: 0,
      missing: 0,
      extra: 0,
      duplicates: 0,
      outOfOrder: 0,
      liveSeqWrong: 0,
      notLive: 0,
      truncatedOk,
      received,
      subToLiveMs: [],
      subToOkMs: [],
      maxLiveAt,
      errFrames,
      errSamples,
      unexpectedCloses,
      closeCodes,
      badSamples: [],
    };
    const expSets = new Map<string, Set<number>>();
    for (let k = 0; k < n; k++) {
      if (!sockets[k]) continue;
      if (done(k)) v.complete++;
      const exp = expected[chanOf(k)]!;
      const got = recv[k]!;
      if (tLive[k]! > 0) {
        v.subToLiveMs.push(tLive[k]! - tSub[k]!);
        // live.seq is the last seq delivered during the catch-up (0 if none).
        if (liveSeq[k] !== lastBeforeLive[k]) v.liveSeqWrong++;
      } else v.notLive++;
      if (tOk[k]! > 0) v.subToOkMs.push(tOk[k]! - tSub[k]!);
      let same = got.length === exp.length;
      for (let i = 0; same && i < exp.length; i++) same = got[i] === exp[i];
      if (same && tLive[k]! > 0 && liveSeq[k] === lastBeforeLive[k]) {
        v.ok++;
        continue;
      }
      v.bad++;
      const gotSet = new Set(got);
      let es = expSets.get(chanOf(k));
      if (!es) expSets.set(chanOf(k), (es = new Set(exp)));
      const missing = exp.filter((s) => !gotSet.has(s)).length;
      const extra = got.filter((s) => !es.has(s)).length;
      let order = 0;
      for (let i = 1; i < got.length; i++) if (got[i]! < got[i - 1]!) order++;
      v.missing += missing;
      v.extra += extra;
      v.duplicates += got.length - gotSet.size;
      v.outOfOrder += order;
      if (v.badSamples.length < 5) {
        const firstMissing = exp.filter((s) => !gotSet.has(s)).slice(0, 5);
        v.badSamples.push(
          `${chanOf(k)} from ${fromOf(k)}: expected ${exp.length} (${exp[0]}..${exp.at(-1)}), got ${got.length} (${got[0]}..${got.at(-1)}), missing ${missing} [${firstMissing.join(",")}], extra ${extra} [${got
            .filter((x) => !es.has(x))
            .slice(0, 5)
            .join(
              ",",
            )}], dups ${got.length - gotSet.size}, out of order ${order}, disorder events ${disorder[k]}, live ${tLive[k]! > 0 ? `seq ${liveSeq[k]} after ${lastBeforeLive[k]}` : "never"}`,
        );
      }
    }
    process.send!(v);
  }
}

// ---------------------------------------------------------------- main

type CaseName = "one" | "many";
type CaseResult = {
  name: CaseName;
  sockets: number;
  channels: number;
  workers: number;
  procs: number;
  storedBefore: number;
  back: number;
  opened: number;
  failedConnects: number;
  connectFailures: string[];
  connectSeconds: number;
  allLive: boolean;
  goToAllLiveSeconds: number;
  goToLastLiveSeconds: number;
  subToLiveMs: Pcts;
  subToOkMs: Pcts;
  publishedDuringStorm: number;
  publishFailures: number;
  storedDuringStorm: number;
  storedNotAcked: number;
  ackedNotStored: number;
  publishSeconds: number;
  expectedPerSocket: { min: number; max: number };
  expectedDeliveries: number;
  received: number;
  verifyWaitSeconds: number;
  complete: number;
  ok: number;
  bad: number;
  missing: number;
  extra: number;
  duplicates: number;
  outOfOrder: number;
  liveSeqWrong: number;
  notLive: number;
  truncatedOk: number;
  errFrames: number;
  errSamples: string[];
  unexpectedCloses: number;
  closeCodes: Record<string, number>;
  badSamples: string[];
  consumers: { max: number; samples: number; failedSamples: number; nonZeroSamples: number };
  metrics: { repairs: number; slowSwitches: number; slowClosed: number; framesDelivered: number; workerRestarts: number; brokerReconnects: number };
  natsServer: { slowConsumers: number; inMsgs: number; outMsgs: number; outBytes: number } | undefined;
  warnings: { msg: string; count: number; sample: string }[];
};

/**
 * What the stream holds on `ev.>` after `after`, read with batched direct gets (no consumer: the sampler
 * must see none). The truth for the live phase: a publish whose ack timed out may still have been stored.
 */
async function storedAfter(nc: NatsConnection, after: number): Promise<{ subject: string; seq: number }[]> {
  const out: { subject: string; seq: number }[] = [];
  let next = after + 1;
  for (let attempt = 0; attempt < 20;) {
    const inbox = createInbox();
    const page: { subject: string; seq: number }[] = [];
    const end = await new Promise<"eob" | "timeout">((res) => {
      const t = setTimeout(() => {
        sub.unsubscribe();
        res("timeout");
      }, 15_000);
      const sub = nc.subscribe(inbox, {
        callback: (_e, m: Msg) => {
          const code = m.headers?.code ?? 0;
          if (code === 0 && m.headers) {
            page.push({ subject: m.headers.get("Nats-Subject"), seq: Number(m.headers.get("Nats-Sequence")) });
            return;
          }
          clearTimeout(t);
          sub.unsubscribe();
          res("eob");
        },
      });
      nc.publish("$JS.API.DIRECT.GET.FANOUT_CHANNELS", JSON.stringify({ seq: next, next_by_subj: "ev.>", batch: 4096 }), { reply: inbox });
    });
    if (end === "timeout") {
      attempt++;
      continue;
    }
    out.push(...page);
    if (page.length === 0) return out;
    next = page[page.length - 1]!.seq + 1;
  }
  throw new Error("could not read the stream back (direct gets timed out 20 times)");
}

async function runCase(
  name: CaseName,
  o: {
    sockets: number;
    channels: number;
    history: number;
    back: number;
    rate: number;
    tail: number;
    maxSeconds: number;
    workers: number;
    procs: number;
    concurrency: number;
  },
): Promise<CaseResult> {
  const log = (s: string): void => console.log(`[${name}] ${s}`);
  const chans = name === "one" ? ["storm.one"] : Array.from({ length: o.channels }, (_, i) => `storm.c${i}`);
  const nats = await startNatsServer();
  const gw = await startScaleGateway({ natsUrl: nats.url, workers: o.workers });
  const clients: ClientProc[] = [];
  let nc: NatsConnection | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    nc = await connect({ servers: nats.url, name: "bench-storm" });
    const js = jetstream(nc);
    const jsm = await jetstreamManager(nc);
    const consumers = { max: 0, samples: 0, failedSamples: 0, nonZeroSamples: 0 };
    let busy = false;
    sampler = setInterval(() => {
      if (busy) return;
      busy = true;
      jsm.streams
        .info("FANOUT_CHANNELS")
        .then(
          (i) => {
            consumers.samples++;
            consumers.max = Math.max(consumers.max, i.state.consumer_count);
            if (i.state.consumer_count > 0) consumers.nonZeroSamples++;
          },
          () => consumers.failedSamples++,
        )
        .finally(() => (busy = false));
    }, 250);

    // Stored history: case one, `history` messages on one channel; case many, back+10 per channel, round robin.
    const seqs = new Map<string, number[]>(chans.map((c) => [c, []]));
    const enc = new TextEncoder();
    const perChannel = name === "one" ? o.history : o.back + 10;
    const fill: string[] = [];
    for (let r = 0; r < perChannel; r++) for (const c of chans) fill.push(c);
    log(`storing ${fmt(fill.length)} messages on ${fmt(chans.length)} channel(s)`);
    for (let i = 0; i < fill.length; i += 1_000) {
      const part = fill.slice(i, i + 1_000);
      const acks = await Promise.all(part.map((c, j) => js.publish(`ev.${c}`, enc.encode(`{"fill":${i + j},"x":"${"y".repeat(64)}"}`))));
      acks.forEach((a, j) => seqs.get(part[j]!)!.push(a.seq));
    }
    const from = chans.map((c) => {
      const s = seqs.get(c)!;
      return s[s.length - o.back]!;
    });

    // Sockets, connected first; nobody subscribes yet.
    const dests = Math.max(2, Math.ceil(o.sockets / 10_000));
    const per = Math.ceil(o.sockets / o.procs);
    const t0 = now();
    for (let p = 0; p < o.procs; p++) {
      const base = p * per;
      const count = Math.min(per, o.sockets - base);
      if (count <= 0) break;
      const c = forkClient(process.argv[1]!, ["--role", "client", "--port", String(gw.port), "--dests", String(dests), "--concurrency", String(o.concurrency)]);
      clients.push(c);
      void c.ask({}, "ready", 30_000).then(
        () => c.child.send({ type: "plan", base, count, channels: chans, from } satisfies Plan),
        () => undefined,
      );
    }
    const conn = await Promise.all(clients.map((c) => c.ask<Connected>({}, "connected", 300_000)));
    const opened = conn.reduce((a, c) => a + c.opened, 0);
    const connectSeconds = (now() - t0) / 1000;
    log(
      `${fmt(opened)} of ${fmt(o.sockets)} sockets open in ${connectSeconds.toFixed(1)} s (${clients.length} client processes, ${dests} destination addresses)`,
    );

    // The publisher runs through the storm: o.rate msg/s, to the one channel or to random ones.
    const live: { channel: string; seq: number }[] = [];
    let pubFailures = 0;
    let publishing = true;
    const pick = rng(7);
    const tPub = now();
    const publisher = (async () => {
      const inflight = new Set<Promise<void>>();
      let i = 0;
      const deadline = Date.now() + (o.maxSeconds + o.tail + 30) * 1000;
      while (publishing && Date.now() < deadline) {
        const due = Math.floor(((now() - tPub) / 1000) * o.rate) + 1;
        while (i < due && inflight.size < 200) {
          const channel = chans[Math.floor(pick() * chans.length)]!;
          const p = js.publish(`ev.${channel}`, enc.encode(`{"live":${i++},"t":${Date.now()}}`)).then(
            (a) => void live.push({ channel, seq: a.seq }),
            () => void pubFailures++,
          );
          inflight.add(p);
          void p.then(() => inflight.delete(p));
        }
        await sleep(Math.max(1, 1000 / o.rate / 2));
      }
      await Promise.all(inflight);
    })();
    await sleep(500);

    // The storm: every socket subscribes at once.
    log(`go: ${fmt(opened)} sockets subscribe from ${o.back} messages back while publishing at ${o.rate}/s`);
    const tGo = now();
    for (const c of clients) c.child.send({ type: "go" });
    let allLive = false;
    let goToAllLive = NaN;
    for (;;) {
      const st = await Promise.all(clients.map((c) => c.ask<Status>({ type: "status" }, "status", 60_000)));
      const settled = st.reduce((a, s) => a + s.settled, 0);
      if (settled >= opened) {
        allLive = st.reduce((a, s) => a + s.live, 0) >= opened;
        goToAllLive = (Math.max(...st.map((s) => s.maxLiveAt)) - tGo) / 1000;
        break;
      }
      if (now() - tGo > o.maxSeconds * 1000) {
        log(`not everyone live after ${o.maxSeconds} s: ${st.reduce((a, s) => a + s.live, 0)} live of ${opened}`);
        break;
      }
      await sleep(250);
    }
    log(allLive ? `all live ${goToAllLive.toFixed(2)} s after go; publishing ${o.tail} s more` : "continuing without everyone live");
    await sleep(o.tail * 1000);
    publishing = false;
    await publisher;
    const publishSeconds = (now() - tPub) / 1000;

    // What each channel's sockets must have: stored messages from their start, then every message stored
    // after the history — read back from the stream, since a publish whose ack timed out may be stored.
    const lastFill = Math.max(...[...seqs.values()].map((a) => a[a.length - 1]!));
    const stored = await storedAfter(nc, lastFill);
    const acked = new Set(live.map((l) => l.seq));
    const storedNotAcked = stored.filter((m) => !acked.has(m.seq)).length;
    const storedSeqs = new Set(stored.map((m) => m.seq));
    const ackedNotStored = live.filter((l) => !storedSeqs.has(l.seq)).length;
    const expected: Record<string, number[]> = {};
    chans.forEach((c, i) => (expected[c] = seqs.get(c)!.filter((s) => s >= from[i]!)));
    for (const m of stored) expected[m.subject.slice("ev.".length)]?.push(m.seq);
    for (const c of chans) expected[c]!.sort((a, b) => a - b);
    const lens = chans.map((c) => expected[c]!.length);
    let expectedDeliveries = 0;
    for (let k = 0; k < opened; k++) expectedDeliveries += expected[chans[k % chans.length]!]!.length; // approximate when connects failed
    log(
      `published ${live.length} acknowledged (${pubFailures} acks failed) during the storm; the stream holds ${stored.length} after the history (${storedNotAcked} stored without an ack, ${ackedNotStored} acked but not found); verifying (waiting for the last deliveries while they come, at most 300 s)`,
    );
    const tv = now();
    const vs = await Promise.all(clients.map((c) => c.ask<Verified>({ type: "verify", expected, waitMs: 300_000 }, "verified", 420_000)));
    const verifyWaitSeconds = (now() - tv) / 1000;
    const m = await scrapeMetrics(gw.url);
    const varz = await fetch(`http://127.0.0.1:${nats.monitorPort}/varz`).then(
      (r) => r.json() as Promise<{ slow_consumers: number; in_msgs: number; out_msgs: number; out_bytes: number }>,
      () => undefined,
    );
    const sum = (f: (v: Verified) => number): number => vs.reduce((a, v) => a + f(v), 0);
    const closeCodes: Record<string, number> = {};
    for (const v of vs) for (const [c, n] of Object.entries(v.closeCodes)) closeCodes[c] = (closeCodes[c] ?? 0) + n;
    clearInterval(sampler);
    sampler = undefined;
    return {
      name,
      sockets: o.sockets,
      channels: chans.length,
      workers: o.workers,
      procs: clients.length,
      storedBefore: fill.length,
      back: o.back,
      opened,
      failedConnects: conn.reduce((a, c) => a + c.failed, 0),
      connectFailures: conn.flatMap((c) => c.failures).slice(0, 5),
      connectSeconds,
      allLive,
      goToAllLiveSeconds: goToAllLive,
      goToLastLiveSeconds: (Math.max(...vs.map((v) => v.maxLiveAt)) - tGo) / 1000,
      subToLiveMs: pcts(vs.flatMap((v) => v.subToLiveMs)),
      subToOkMs: pcts(vs.flatMap((v) => v.subToOkMs)),
      publishedDuringStorm: live.length,
      publishFailures: pubFailures,
      publishSeconds,
      storedDuringStorm: stored.length,
      storedNotAcked,
      ackedNotStored,
      expectedPerSocket: { min: Math.min(...lens), max: Math.max(...lens) },
      expectedDeliveries,
      received: sum((v) => v.received),
      verifyWaitSeconds,
      complete: sum((v) => v.complete),
      ok: sum((v) => v.ok),
      bad: sum((v) => v.bad),
      missing: sum((v) => v.missing),
      extra: sum((v) => v.extra),
      duplicates: sum((v) => v.duplicates),
      outOfOrder: sum((v) => v.outOfOrder),
      liveSeqWrong: sum((v) => v.liveSeqWrong),
      notLive: sum((v) => v.notLive),
      truncatedOk: sum((v) => v.truncatedOk),
      errFrames: sum((v) => v.errFrames),
      errSamples: vs.flatMap((v) => v.errSamples).slice(0, 5),
      unexpectedCloses: sum((v) => v.unexpectedCloses),
      closeCodes,
      badSamples: vs.flatMap((v) => v.badSamples).slice(0, 8),
      consumers,
      metrics: {
        repairs: m.fanout_live_repairs_total ?? 0,
        slowSwitches: m.fanout_slow_consumer_switches_total ?? 0,
        slowClosed: m.fanout_slow_consumer_closed_total ?? 0,
        framesDelivered: m.fanout_frames_delivered_total ?? 0,
        workerRestarts: m.fanout_worker_restarts_total ?? 0,
        brokerReconnects: m.fanout_broker_reconnects_total ?? 0,
      },
      natsServer: varz && { slowConsumers: varz.slow_consumers, inMsgs: varz.in_msgs, outMsgs: varz.out_msgs, outBytes: varz.out_bytes },
      warnings: gatewayWarnings(gw, [/AUTHENTICATION IS OFF/]),
    };
  } finally {
    if (sampler) clearInterval(sampler);
    await stopClients(clients);
    await nc?.close().catch(() => undefined);
    await gw.stop();
    await nats.stop();
  }
}

const ms = (v: number): string => (Number.isFinite(v) ? fmt(v, 1) : "—");

function table(rs: CaseResult[]): string {
  const col = (f: (r: CaseResult) => string): string => rs.map(f).join(" | ");
  const rows: [string, string][] = [
    ["sockets open / asked (failed connects)", col((r) => `${fmt(r.opened)} / ${fmt(r.sockets)} (${r.failedConnects})`)],
    ["channels; stored before; start per socket", col((r) => `${fmt(r.channels)}; ${fmt(r.storedBefore)}; ${r.back} messages of its channel back`)],
    [
      "publishing during the storm (offered live deliveries/s)",
      col(
        (r) =>
          `${fmt(r.storedDuringStorm)} msgs stored in ${fmt(r.publishSeconds, 1)} s (${fmt((r.storedDuringStorm / r.publishSeconds) * (r.opened / r.channels))}/s)`,
      ),
    ],
    [
      "publisher: acked / ack failed (of those, stored anyway)",
      col(
        (r) =>
          `${fmt(r.publishedDuringStorm)} / ${fmt(r.publishFailures)} (${fmt(r.storedNotAcked)})${r.ackedNotStored ? `, **${r.ackedNotStored} acked but not in the stream**` : ""}`,
      ),
    ],
    ["**go → all sockets live (s)**", col((r) => (r.allLive ? `**${fmt(r.goToAllLiveSeconds, 2)}**` : `**not all live** (${fmt(r.notLive)} never)`))],
    ["per socket sub → ok, p50 / p99 / max (ms)", col((r) => `${ms(r.subToOkMs.p50)} / ${ms(r.subToOkMs.p99)} / ${ms(r.subToOkMs.max)}`)],
    ["**per socket sub → live, p50 / p99 / max (ms)**", col((r) => `${ms(r.subToLiveMs.p50)} / ${ms(r.subToLiveMs.p99)} / ${ms(r.subToLiveMs.max)}`)],
    ["messages per socket expected (min–max)", col((r) => `${fmt(r.expectedPerSocket.min)}–${fmt(r.expectedPerSocket.max)}`)],
    ["message frames received / expected (verify waited s)", col((r) => `${fmt(r.received)} / ${fmt(r.expectedDeliveries)} (${fmt(r.verifyWaitSeconds, 1)})`)],
    ["**sockets with exactly every message once, in order**", col((r) => `**${fmt(r.ok)} / ${fmt(r.opened)}**`)],
    ["missing / extra / duplicates / out of order", col((r) => `${fmt(r.missing)} / ${fmt(r.extra)} / ${fmt(r.duplicates)} / ${fmt(r.outOfOrder)}`)],
    ["`live` frame seq ≠ last catch-up seq; never live", col((r) => `${r.liveSeqWrong}; ${r.notLive}`)],
    ["errors: err frames / unexpected closes / truncated oks", col((r) => `${r.errFrames} / ${r.unexpectedCloses} / ${r.truncatedOk}`)],
    [
      "**stream consumers, max of samples every 250 ms (samples)**",
      col((r) => `**${r.consumers.max}** (${r.consumers.samples}, ${r.consumers.failedSamples} failed)`),
    ],
    [
      "gateway: live frames delivered (fanout_frames_delivered_total); live repairs; slow-consumer switches / closes",
      col((r) => `${fmt(r.metrics.framesDelivered)}; ${r.metrics.repairs}; ${r.metrics.slowSwitches} / ${r.metrics.slowClosed}`),
    ],
    [
      "gateway warnings / worker restarts / NATS reconnects",
      col((r) => `${fmt(r.warnings.reduce((a, w) => a + w.count, 0))} / ${r.metrics.workerRestarts} / ${r.metrics.brokerReconnects}`),
    ],
    [
      "nats-server: slow consumers; messages out (MB out)",
      col((r) => (r.natsServer ? `${r.natsServer.slowConsumers}; ${fmt(r.natsServer.outMsgs)} (${fmt(r.natsServer.outBytes / 1048576, 1)})` : "—")),
    ],
  ];
  const head = `| | ${col((r) => (r.name === "one" ? "1 channel" : `${fmt(r.channels)} channels`))} |\n|---|${rs.map(() => "---:").join("|")}|`;
  return [head, ...rows.map(([a, b]) => `| ${a} | ${b} |`)].join("\n");
}

const BENCH = defineBench("storm", {
  sockets: { type: "number", integer: true, min: 1, max: 100_000, default: 10_000, quick: 1_000, help: "sockets that subscribe at once" },
  channels: { type: "number", integer: true, min: 1, default: 1_000, help: "channels of the many-channels case" },
  history: { type: "number", integer: true, min: 1, default: 1_000, help: "messages stored per channel before the storm" },
  back: { type: "number", integer: true, min: 0, default: 100, help: "how far back each socket starts (from:{seq})" },
  rate: std("rate", { default: 50, help: "messages per second published during the storm" }),
  tail: { type: "number", min: 0, default: 2, help: "seconds of live delivery checked after the storm" },
  "max-seconds": { type: "number", min: 1, default: 120, help: "a case's deadline" },
  concurrency: { type: "number", integer: true, min: 1, default: 500, help: "sockets opening at once per client process" },
  workers: std("workers", { help: "gateway workers (default: one per 12,500 sockets, at least 2)" }),
  procs: std("procs", { help: "client processes (default: one per 5,000 sockets, at least 2)" }),
  cases: { type: "list", default: ["one", "many"], choices: ["one", "many"], help: "one channel, many channels, or both" },
  out: std("out", { help: "the results file a run's section is appended to (default loadtest/results/storm.md)" }),
  "no-write": std("no-write"),
  quick: std("quick"),
  role: { type: "string", default: "main", choices: ["main", "client"], internal: true, help: "the process's part" },
  port: { type: "number", internal: true, help: "client: the gateway's port" },
  dests: { type: "number", internal: true, help: "client: source addresses" },
});

runBench(BENCH, async ({ flags: v }) => {
  if (v.role === "client") return clientMain(v.port!, v.dests!, v.concurrency).then(() => KEEP_RUNNING);
  const { sockets } = v;
  const workers = v.workers ?? Math.max(2, Math.ceil(sockets / 12_500));
  const procs = v.procs ?? Math.max(2, Math.ceil(sockets / 5_000));
  const o = {
    sockets,
    channels: v.channels,
    history: v.history,
    back: v.back,
    rate: v.rate,
    tail: v.tail,
    maxSeconds: v["max-seconds"],
    workers,
    procs,
    concurrency: v.concurrency,
  };
  const out = reportPath(v, "storm.md");
  if (o.back > o.history) throw new FlagError("--back must not exceed --history");
  const load0 = loadAvg();
  const started = new Date();
  const results: CaseResult[] = [];
  for (const c of v.cases as CaseName[]) results.push(await runCase(c, o));
  const header = `bench:storm — ${fmt(sockets)} sockets (${procs} client processes) subscribe at once with from:{seq} ${o.back} messages of their channel back, while ${o.rate} msg/s are published (JetStream, direct); gateway ${workers} workers, ${revision()}. Load average before: ${load0}, after: ${loadAvg()}.`;
  console.log(`\n${header}`);
  for (const r of results) {
    if (r.connectFailures.length) console.log(`[${r.name}] connect failures: ${r.connectFailures.join("; ")}`);
    if (r.errSamples.length) console.log(`[${r.name}] err frames: ${r.errSamples.join(" ")}`);
    if (Object.keys(r.closeCodes).length) console.log(`[${r.name}] unexpected closes by code: ${JSON.stringify(r.closeCodes)}`);
    for (const b of r.badSamples) console.log(`[${r.name}] bad socket: ${b}`);
    for (const w of r.warnings) console.log(`[${r.name}] gateway log x${w.count}: ${w.sample}`);
  }
  const t = table(results);
  const pass = results.every((r) => r.ok === r.opened && r.failedConnects === 0 && r.errFrames === 0 && r.consumers.max === 0 && r.allLive);
  console.log(`\n${t}\n\nevery socket complete, in order, once; no errors; 0 consumers: ${pass ? "yes" : "NO"}\n`);
  if (out) {
    const json = JSON.stringify({ started: started.toISOString(), ...o, loadBefore: load0, results }, null, 1);
    appendSection(
      out,
      "# bench:storm — reconnect storms on the consumer-free replay path\n\nWritten by `npm run bench -- storm`; one section per run, newest last.",
      `## ${started.toISOString().slice(0, 16).replace("T", " ")} UTC — ${fmt(sockets)} sockets\n\n${header}\n\n${t}\n\nEvery socket complete, in order, once; no errors; 0 consumers: **${pass ? "yes" : "no"}**\n\n<details><summary>JSON</summary>\n\n\`\`\`json\n${json}\n\`\`\`\n</details>`,
    );
  }
});
