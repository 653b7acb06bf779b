// npm run bench -- chaos (alias npm run chaos) [--seed N --minutes M --gap S --lanes N | --overlap --kinds a,b --regions --quick --out path.md]
// A fault-injection run: a 3-node NATS cluster (R3 stream), or with --regions three regions of one node each
// (regions.ts, region faults), three gateway instances (2 workers each), client
// processes (WebSocket resume, SSE, durables with acks, publishers over WS, HTTP and NATS), a seeded fault
// schedule, then the checker against the stream's own contents. Prints a readable report and one JSON line;
// exits 1 on any violation, 2 when the run itself failed or a flag is bad. Every process it starts is killed at the end,
// on failure and on Ctrl-C; the whole run has a hard deadline.
import { fork, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { gzipSync } from "node:zlib";
import { basename, join, resolve } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { waitFor } from "#testkit/wait.js";
import { check, matches, VIOLATION_KEYS, type StoredMsg } from "./checker.js";
import { buildSchedule, CLUSTER_FAULT_KINDS, FAULT_KINDS, faultKinds, REGIONS_DEFAULT_KINDS, type FaultKind } from "./schedule.js";
import { startTopology, STREAM, SUBJECT_PREFIX, type Topology } from "./topology.js";
import { startRegionsTopology } from "./regions.js";
import { inject, type FaultRecord } from "./faults.js";
import { Locks, OVERLAP_PLAN, resourcesOf } from "./lanes.js";
import type { Fault } from "./schedule.js";
import { kindStats, latency, readable } from "./report.js";
import { guarded } from "../bench/common.js";
import { FlagError, std, type FlagValues } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { reportPath } from "../kit/results.js";
import { faultsAtSilences, lagAtSilences, sampleLag, socketStatesAtSilences } from "./lag.js";
import { latencySeries, renderLatencyChart } from "./chart.js";
import type { ClientsConfig, ClientsLog, FromClients, PubSpec, SubSpec, ToClients } from "./clients.js";
import { checkWebhook, describeDisorder, logsAround, startWebhookReceiver, webhookEnv } from "./webhook.js";
import type { WebhookReceiver } from "#testkit/webhook-receiver.js";

type Args = {
  seed: number;
  minutes: number;
  gapMs: number;
  quick: boolean;
  report?: string | undefined;
  kinds: FaultKind[];
  sabotage: boolean;
  finishWaitMs: number;
  /** Schedules run side by side (overlapping faults on different things); 1: one fault at a time. */
  lanes: number;
  /** Lanes by what faults act on (lanes.ts OVERLAP_PLAN) instead of `lanes` copies of every kind. */
  overlap: boolean;
  /** Three regions (regions.ts) instead of one 3-node cluster. */
  regions: boolean;
};

const BENCH = defineBench("chaos", {
  quick: std("quick", { help: "a 1-minute schedule, 3 s between faults; writes no report unless --out is given" }),
  seed: { type: "number", min: 0, help: "the fault schedule and the clients' choices; the same seed makes the same schedule (default: from the clock)" },
  minutes: { type: "number", min: 0, default: 5, quick: 1, help: "how long the fault schedule runs (min)" },
  gap: { type: "number", min: 0, default: 5, quick: 3, help: "seconds between faults" },
  kinds: {
    type: "list",
    choices: FAULT_KINDS,
    help: `the faults the schedule draws from (default: ${CLUSTER_FAULT_KINDS.join(",")}; with --regions ${REGIONS_DEFAULT_KINDS.join(",")})`,
  },
  regions: { type: "boolean", help: "three regions (a NATS supercluster, a gateway instance per region) with region faults, instead of one 3-node cluster" },
  lanes: { type: "number", min: 0, default: 1, help: "schedules run side by side (overlapping faults on different things); 1: one fault at a time" },
  overlap: { type: "boolean", help: "lanes by what faults act on (lanes.ts) instead of --lanes copies of every kind" },
  "finish-wait": { type: "number", min: 0, default: 45, help: "seconds subscribers may take to catch up once publishing stopped" },
  sabotage: { type: "boolean", help: "drop one received message from one subscriber's log before the check: the run must fail" },
  out: std("out", { help: "the report's file; .svg and .json.gz beside it (default loadtest/results/chaos-seed<N>.md)" }),
  report: { type: "string", help: "the old name of --out" },
  "no-write": std("no-write", { help: "print the report and the summary line only; write no files" }),
});

function kindsOf(given: string[] | undefined, regions: boolean): FaultKind[] {
  try {
    return faultKinds(given, regions);
  } catch (e) {
    throw new FlagError((e as Error).message);
  }
}

function toArgs(v: FlagValues<typeof BENCH.flags>): Args {
  const seed = Math.floor(v.seed ?? Date.now() % 1_000_000);
  return {
    seed,
    minutes: v.minutes,
    gapMs: v.gap * 1000,
    quick: v.quick,
    // A full run keeps its report beside the other results; a quick one only when asked.
    report: reportPath({ ...v, out: v.out ?? v.report }, `chaos-${v.regions ? "regions-" : ""}seed${seed}.md`),
    kinds: kindsOf(v.kinds, v.regions),
    regions: v.regions,
    sabotage: v.sabotage,
    // How long subscribers may take to catch up once publishing stopped: redeliveries come after the 5 s ack
    // wait, and a durable whose consumer leader moved can wait ~20 s more (loadtest/results/chaos-findings.md).
    finishWaitMs: v["finish-wait"] * 1000,
    lanes: Math.max(1, Math.floor(v.lanes)),
    overlap: v.overlap,
  };
}

const say = (s: string) => process.stderr.write(`chaos: ${s}\n`);

/** Subscribers and publishers, spread over the instances and over two client processes. */
function clientsConfig(urls: string[], natsUrls: string[], ns: string, dir: string): ClientsConfig[] {
  const rot = (i: number) => [...urls.slice(i % 3), ...urls.slice(0, i % 3)];
  const subs: SubSpec[] = [
    { id: "ws-a", kind: "resume", pattern: `${ns}.a`, start: "seq1" },
    { id: "ws-star-live", kind: "resume", pattern: `${ns}.*`, start: "live" },
    { id: "ws-all", kind: "resume", pattern: `${ns}.>`, start: "seq1" },
    // Two of the six resuming subscribers are the SDK (one per client process, on different instances).
    { id: "sdk-b-live", kind: "resume", pattern: `${ns}.b`, start: "live", sdk: true },
    { id: "sdk-d", kind: "resume", pattern: `${ns}.d.*`, start: "seq1", sdk: true },
    { id: "ws-star", kind: "resume", pattern: `${ns}.*`, start: "seq1" },
    { id: "sse-all", kind: "sse", pattern: `${ns}.>` },
    { id: "sse-a", kind: "sse", pattern: `${ns}.a` },
    { id: "sse-star", kind: "sse", pattern: `${ns}.*` },
    { id: "dur-a", kind: "durable", pattern: `${ns}.a`, durable: `${ns}-a` },
    { id: "dur-b-slow", kind: "durable", pattern: `${ns}.b`, durable: `${ns}-b`, ackDelayMs: 300 },
    { id: "dur-c", kind: "durable", pattern: `${ns}.c`, durable: `${ns}-c`, ackDelayMs: 40 },
  ].map((s, i) => ({ ...(s as SubSpec), urls: rot(i) }));
  const channels = [`${ns}.a`, `${ns}.b`, `${ns}.c`, `${ns}.d.e`];
  const pub = (id: string, via: PubSpec["via"], ratePerS: number, i: number): PubSpec => ({
    id,
    via,
    ratePerS,
    channels: [...channels.slice(i % 4), ...channels.slice(0, i % 4)],
    urls: rot(i),
    natsUrls,
    subjectPrefix: SUBJECT_PREFIX,
  });
  const pubs = [pub("pub-ws1", "ws", 8, 0), pub("pub-http", "http", 6, 1), pub("pub-ws2", "ws", 8, 2), pub("pub-nats", "nats", 6, 3)];
  return [0, 1].map((p) => ({ subs: subs.filter((_, i) => i % 2 === p), pubs: pubs.filter((_, i) => i % 2 === p), logFile: join(dir, `clients-${p}.json`) }));
}

function waitMsg(child: ChildProcess, type: FromClients["type"], timeoutMs: number): Promise<FromClients> {
  return new Promise((res, rej) => {
    const t = setTimeout(() => rej(new Error(`client process: no ${type} within ${timeoutMs} ms`)), timeoutMs);
    const on = (m: FromClients) => {
      if (m.type === "error") rej(new Error(`client process failed: ${m.message}`));
      if (m.type !== type) return;
      clearTimeout(t);
      child.off("message", on);
      res(m);
    };
    child.on("message", on);
    child.once("exit", (code) => rej(new Error(`client process exited ${code} before ${type}`)));
  });
}

/** Every message of the stream (the truth), read with an ordered consumer up to the last seq. */
async function readStream(nc: NatsConnection): Promise<StoredMsg[]> {
  const jsm = await jetstreamManager(nc);
  const info = await waitFor(() => jsm.streams.info(STREAM), { timeoutMs: 20_000, what: "stream info" });
  const last = info.state.last_seq;
  const out: StoredMsg[] = [];
  if (info.state.messages === 0) return out;
  const consumer = await jetstream(nc).consumers.get(STREAM);
  const msgs = await consumer.consume();
  const timer = setTimeout(() => msgs.stop(), 60_000);
  for await (const m of msgs) {
    let id: string | undefined;
    try {
      id = (m.json() as { id?: string }).id;
    } catch {
      /* not one of ours */
    }
    out.push({ seq: m.seq, channel: m.subject.slice(SUBJECT_PREFIX.length + 1), id });
    if (m.seq >= last) break;
  }
  clearTimeout(timer);
  await msgs.close();
  if (out.at(-1)?.seq !== last) throw new Error(`read the stream up to ${out.at(-1)?.seq ?? 0}, not its last seq ${last}`);
  return out;
}

async function run(a: Args): Promise<number> {
  const t0 = Date.now();
  const dir = mkdtempSync(join(tmpdir(), "fgw-chaos-"));
  let topo: Topology | undefined;
  let nc: NatsConnection | undefined;
  let receiver: WebhookReceiver | undefined;
  const children: ChildProcess[] = [];
  const cleanup = async () => {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    await receiver?.down().catch(() => undefined);
    await nc?.close().catch(() => undefined);
    await topo?.stopAll().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  };
  return guarded(say, (a.minutes * 60 + 240) * 1000 + a.finishWaitMs, cleanup, async () => {
    const schedule = buildSchedule({ seed: a.seed, durationMs: a.minutes * 60_000, meanGapMs: a.gapMs, kinds: a.kinds });
    say(`seed ${a.seed}, ${a.minutes} min, ${schedule.length} faults planned; starting ${a.regions ? "3 regions" : "3 NATS nodes"} and 3 gateways`);
    receiver = await startWebhookReceiver();
    topo = await (a.regions ? startRegionsTopology : startTopology)(webhookEnv(receiver.url));
    nc = await connect({ servers: topo.natsUrls, maxReconnectAttempts: -1, reconnectTimeWait: 250, name: "chaos-orchestrator" });
    const jsm = await jetstreamManager(nc, { timeout: 5_000 });
    const ns = `chaos${a.seed}`;
    const configs = clientsConfig(
      topo.instances.map((i) => i.url),
      topo.natsUrls,
      ns,
      dir,
    );
    for (const cfg of configs)
      children.push(fork(resolve(import.meta.dirname, "clients.js"), [JSON.stringify(cfg)], { stdio: ["ignore", "inherit", "inherit", "ipc"] }));
    await Promise.all(children.map((c) => waitMsg(c, "ready", 30_000)));
    const toAll = (m: ToClients) => children.forEach((c) => c.send(m));
    toAll({ type: "start-publishing" });
    say(`clients subscribed; publishing; faults start`);

    const faults: FaultRecord[] = [];
    const lag = sampleLag(
      topo.instances.map((i) => i.url),
      2_000,
    );
    const phase0 = Date.now();
    const endAt = phase0 + a.minutes * 60_000;
    // Lane 0 is the schedule of the seed; more lanes add schedules of their own (seed + lane), their faults
    // overlapping lane 0's on other things (lanes.ts): every lock is taken before a fault starts.
    const locks = new Locks();
    const running = topo;
    let next = 0;
    const runLane = async (lane: Fault[]): Promise<void> => {
      for (const f of lane) {
        const wait = phase0 + f.atMs - Date.now();
        if (Date.now() + Math.max(0, wait) >= endAt) return;
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const release = await locks.take(resourcesOf(f));
        try {
          if (Date.now() >= endAt) return;
          const i = next++;
          const rec = await inject({ topo: running, jsm, clients: children, seed: a.seed, lockAny: (names) => locks.takeAny(names) }, f, i);
          faults.push(rec);
          say(`fault ${i} ${rec.kind} on ${rec.target}: ${((rec.endedAt - rec.startedAt) / 1000).toFixed(1)} s`);
        } finally {
          release();
        }
      }
    };
    const lanes = a.overlap
      ? OVERLAP_PLAN.flatMap((g) => Array.from({ length: g.lanes }, () => g))
          .map((g, l) => ({ ...g, kinds: g.kinds.filter((k) => a.kinds.includes(k)), seed: a.seed + l }))
          .filter((g) => g.kinds.length > 0)
          .map((g) => buildSchedule({ seed: g.seed, durationMs: a.minutes * 60_000, meanGapMs: g.gapMs ?? a.gapMs, kinds: g.kinds }))
      : [
          schedule,
          ...Array.from({ length: a.lanes - 1 }, (_, l) =>
            buildSchedule({ seed: a.seed + l + 1, durationMs: a.minutes * 60_000, meanGapMs: a.gapMs, kinds: a.kinds }),
          ),
        ];
    await Promise.all(lanes.map(runLane));
    faults.sort((x, y) => x.startedAt - y.startedAt);
    const remaining = endAt - Date.now();
    if (remaining > 0) await new Promise((r) => setTimeout(r, Math.min(remaining, 5_000)));

    lag.stop();
    toAll({ type: "stop-publishing" });
    await Promise.all(children.map((c) => waitMsg(c, "publishing-stopped", 20_000)));
    await Promise.all(topo.instances.map((i) => i.ready(30_000)));
    const truth = await readStream(nc);
    say(`publishing stopped; the stream holds ${truth.length} messages; waiting for subscribers to catch up`);
    const until: Record<string, number> = {};
    for (const cfg of configs) for (const s of cfg.subs) until[s.id] = truth.filter((m) => matches(s.pattern, m.channel)).at(-1)?.seq ?? 0;
    const owed: Record<string, number[]> = {};
    for (const cfg of configs)
      for (const s of cfg.subs) if (s.kind === "durable") owed[s.id] = truth.filter((m) => matches(s.pattern, m.channel)).map((m) => m.seq);
    toAll({ type: "finish", until, owed, timeoutMs: a.finishWaitMs });
    const finished = await Promise.all(children.map((c) => waitMsg(c, "finished", a.finishWaitMs + 15_000)));
    const pending = finished.flatMap((f) => (f.type === "finished" ? f.pending : []));
    const consumers: unknown[] = [];
    if (pending.length) {
      say(`not caught up at the end: ${pending.join("; ")}`);
      // Where the streams stand on the gateways' side (the control plane's user info: SSE streams' phases).
      const info = await fetch(`${topo.instances[0]!.url}/v1/server/users/anon`, { signal: AbortSignal.timeout(5_000) })
        .then((r) => r.text())
        .catch((e: unknown) => String(e));
      say(`the gateways' view of the clients: ${info}`);
      // The durable consumers as JetStream sees them, for the record of a stalled durable.
      for await (const ci of jsm.consumers.list(STREAM)) {
        if (!ci.config.durable_name?.includes(ns)) continue;
        const c = {
          name: ci.name,
          filter: ci.config.filter_subject,
          delivered: ci.delivered.stream_seq,
          ackFloor: ci.ack_floor.stream_seq,
          numPending: ci.num_pending,
          numAckPending: ci.num_ack_pending,
          numRedelivered: ci.num_redelivered,
          numWaiting: ci.num_waiting,
          pushBound: ci.push_bound ?? false,
        };
        consumers.push(c);
        say(`consumer ${JSON.stringify(c)}`);
      }
    }

    // The webhook: every event the events stream holds accepted by the receiver, in order per channel.
    const webhook = await checkWebhook(receiver, jsm, a.finishWaitMs);
    say(`webhook: ${webhook.received} of ${webhook.expected} events accepted, ${webhook.lost} lost, ${webhook.outOfOrder} out of order`);

    const logs = configs.map((c) => JSON.parse(readFileSync(c.logFile, "utf8")) as ClientsLog);
    const subscribers = logs.flatMap((l) => l.subscribers);
    const publishes = logs.flatMap((l) => l.publishes);
    const events = logs.flatMap((l) => l.events).sort((x, y) => x.t - y.t);
    if (a.sabotage) subscribers.find((s) => s.kind === "resume" && s.receipts.length > 2)?.receipts.splice(1, 1);
    const result = check(truth, subscribers, publishes);
    const silences = lagAtSilences(events, lag.samples);
    // Around each violation (first 10): the client's receipts just before and after, and its connection
    // events over that time, to tell what the gateway sent from what the client asked for.
    const violationContext = result.violations.slice(0, 10).map((v) => {
      const sub = subscribers.find((x) => x.client === v.client);
      const at = sub ? sub.receipts.findIndex((r) => r.seq === v.seq) : -1;
      const near = sub && at >= 0 ? sub.receipts.slice(Math.max(0, at - 15), at + 25) : [];
      const [from, to] = [near[0]?.t ?? 0, near.at(-1)?.t ?? 0];
      return { ...v, receipts: near, events: events.filter((e) => e.client === v.client && e.t >= from - 5_000 && e.t <= to + 1_000) };
    });
    const instanceLogs = topo.instances.map((i) => ({
      name: `gw${i.index}`,
      primaryPids: i.runs.map((r) => r.process.pid ?? 0),
      logs: i.runs.flatMap((r) => r.logs),
    }));
    const webhookDisorder = describeDisorder(webhook.disorder, faults, instanceLogs, phase0);
    // Events the webhook got that the stream no longer holds: what the gateways said about the stream until then.
    if (webhook.pastEndFirstAt)
      for (const l of logsAround(instanceLogs, phase0, webhook.pastEndFirstAt + 30_000, phase0).slice(-200)) say(`past the end: ${l}`);
    const kinds = kindStats(faults, events);
    const lat = latency(subscribers, faults);
    const faultsByKind = Object.fromEntries(kinds.map((k) => [k.kind, k.count]));
    const text = readable({ check: result, webhook, webhookDisorder, kinds, lat, faults, t0: phase0 });
    const ok = result.ok && webhook.lost === 0 && webhook.outOfOrder === 0;
    const command = `npm run chaos -- --seed ${a.seed} --minutes ${a.minutes} --gap ${a.gapMs / 1000}${a.overlap ? " --overlap" : a.lanes > 1 ? ` --lanes ${a.lanes}` : ""}${a.regions ? " --regions" : ""}${a.kinds.join() !== (a.regions ? REGIONS_DEFAULT_KINDS : CLUSTER_FAULT_KINDS).join() ? ` --kinds ${a.kinds.join(",")}` : ""}${a.quick ? " --quick" : ""}`;
    process.stdout.write(`${text}\n\n`);
    const summary = {
      seed: a.seed,
      minutes: a.minutes,
      faults: faults.length,
      faultsByKind,
      ...Object.fromEntries(VIOLATION_KEYS.map((k) => [k, result[k]])),
      webhookLost: webhook.lost,
      webhookOutOfOrder: webhook.outOfOrder,
      webhook: { ...webhook, disorder: webhookDisorder.map(({ logs: _, ...d }) => d) },
      durableUnacked: result.durableUnacked,
      redelivered: result.redelivered,
      messages: truth.length,
      expected: result.expected,
      received: result.received,
      published: result.published,
      notCaughtUp: pending.length,
      // SSE streams a subscriber gave up on after 6 s without a byte (clients.ts): counted, not hidden.
      sseSilentReconnects: silences.length,
      // Of those, how many came while their instance reported a worker's event loop stalled 3 s or more, and
      // how many when it left a metrics scrape unanswered (down, restarting, or a worker not answering).
      sseSilentWithLag: silences.filter((x) => (x.maxLagMs ?? 0) >= 3_000).length,
      sseSilentNearUnanswered: silences.filter((x) => x.unanswered > 0).length,
      sseSilentByFault: faultsAtSilences(
        silences,
        faults,
        topo.instances.map((i) => i.url),
      ),
      // The TCP states of the silent streams' connections when they were given up (first 100 per client process).
      sseSilentSockets: socketStatesAtSilences(events),
      eventLoopLagMaxMs: lag.samples.reduce((m, x) => Math.max(m, x.maxLagMs ?? 0), 0),
      metricsUnanswered: lag.samples.filter((x) => x.maxLagMs === null).length,
      ...(pending.length ? { pending, consumers } : {}),
      latencyP99Ms: { duringFaults: lat.duringFaults.p99, outside: lat.outside.p99 },
      ok,
      command,
      seconds: Math.round((Date.now() - t0) / 1000),
    };
    if (a.report) {
      const svgFile = a.report.replace(/\.md$/, "") + ".svg";
      writeFileSync(
        svgFile,
        renderLatencyChart(latencySeries(subscribers, phase0), faults, phase0, `chaos seed ${a.seed}: delivery latency per second (log scale), faults shaded`),
      );
      const chart = `![delivery latency over time, faults shaded](${basename(svgFile)})`;
      const raw = `Raw data: [${basename(a.report, ".md")}.json.gz](${basename(a.report, ".md")}.json.gz) (every event, fault and lag sample; \`zcat\` to read).`;
      const md = `# Chaos run, seed ${a.seed}\n\n\`${command}\` — ${new Date(t0).toISOString()}, ${summary.seconds} s in all, ${faults.length} faults, ${truth.length} messages in the stream. ${ok ? "**No violation.**" : "**Violations found** (below)."}\n\n${raw}\n\n${chart}\n\n${text}\n\n### Summary line\n\n\`\`\`json\n${JSON.stringify(summary)}\n\`\`\`\n`;
      writeFileSync(a.report, md);
      // The raw run, gzipped: a 30-minute run's events are megabytes of JSON (loadtest/results keeps the newest of each kind).
      writeFileSync(
        a.report.replace(/\.md$/, "") + ".json.gz",
        gzipSync(
          JSON.stringify({ summary, check: result, violationContext, webhookDisorder, kinds, latency: lat, faults, events, silences, lag: lag.samples }),
        ),
      );
      say(`report written to ${a.report}`);
    }
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return ok ? 0 : 1;
  });
}

runBench(BENCH, async ({ flags }) => run(toArgs(flags)), { failed: 2 });
