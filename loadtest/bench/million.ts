// bench:million — a million idle WebSockets on this machine, with the gateway, nats-server and the clients
// (the load tools' native engine) all on it: time to connect them all, the gateway's resident memory and the
// kernel's memory per connection (both measured), one message to all (time until the last delivery and the
// gateway's CPU for it), then a steady rate to all held for a minute with no socket falling behind.
//   npm run bench -- million [--clients N] [--steady 60] [--rate 1] [--workers W] [--procs P] [--wave K]
// A process may hold at most 20,000 open files here, so the gateway gets one worker per 18,000 clients, started
// WORKER_START_WAVE at a time, and sub-cluster as many processes. As root it takes a network namespace of its
// own (netns.ts). Writes loadtest/results/million.md and million.json; the JSON is also the last line printed.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { childPids, fmt, guarded, ROOT, startNats, until } from "./common.js";
import { inOwnNetns } from "./netns.js";
import { memoryGuard, perSocket, readKernelMem } from "./kernel-mem.js";
import { groupStat, loadAvg, procStat, progressLines, revision, scrapeMetrics, settledRss } from "./scale-kit.js";
import { errorsOf, millionReport, type MillionResult, type Phase } from "./million-report.js";
import { fdsOf } from "../soak/sampler.js";
import { FLOOR_MAX_CLIENTS, uwsFloor, type Floor } from "./uws-floor.js";
import { std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { commandLine, reportPath, sibling, writeReport } from "../kit/results.js";
import { bounded, PUB_CLI, runNode, SUB_CLI, TreeCpu, treePids, type Proc } from "../compare/proc.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { LatencyStats } from "../../subtools/src/shared/mod.js";
import type { SubResult } from "../../subtools/src/result.js";
import type { ProgressLine } from "../../subtools/src/master.js";

const log = (s: string): void => console.log(`[bench:million] ${s}`);
const PER_PROCESS = 18_000;
const CHANNEL = "million.all";
const NEVER = 1_000_000;
/** Connection attempts in flight over all client processes, unless --max-pending says per process. */
const PENDING_BUDGET = 2_048;
/** Preloaded into the gateway's processes: SIGUSR2 there runs a full collection (see the file). */
const GC_ON_SIGNAL = resolve(ROOT, "loadtest/bench/gc-on-signal.cjs");

const BENCH = defineBench("million", {
  clients: std("clients", { default: 1_000_000, quick: 2_000, help: "WebSocket clients, all subscribed to one channel" }),
  steady: { type: "number", integer: true, min: 1, default: 60, quick: 5, help: "seconds the steady rate is held" },
  rate: std("rate", {
    default: 1,
    min: 0.1,
    max: 20,
    help: "messages per second to all clients in the steady phase (slowed when one message takes longer than the gap to reach all)",
  }),
  workers: std("workers", { help: "gateway workers (default: one per 18,000 clients, at least 2)" }),
  procs: std("procs", { help: "client processes (default: one per 18,000 clients)" }),
  ramp: {
    type: "number",
    min: 0,
    default: 0,
    help: "connections opened per second over all client processes (0: as fast as each process's attempts in flight, --max-pending, allow)",
  },
  "max-pending": {
    type: "number",
    integer: true,
    min: 0,
    default: 0,
    help: `connection attempts in flight per client process (0: ${PENDING_BUDGET} over all processes, 16 to 256 each, so that an attempt waits about a second, not past the client's 10 s deadline)`,
  },
  wave: { type: "number", integer: true, min: 0, default: 8, help: "gateway workers started at a time (WORKER_START_WAVE; 0: all at once)" },
  "min-free-mb": { type: "number", integer: true, min: 0, default: 1_536, help: "stop the run when the machine's available memory falls under this" },
  "worker-cap": {
    type: "string",
    default: "auto",
    help: "WORKER_MAX_CONNECTIONS: connections at which a worker closes its listeners so that new ones go to the others (auto: the open-files limit less 5 %)",
  },
  "no-migrate": {
    type: "boolean",
    help: "leave net.ipv4.tcp_migrate_req at 0 in the bench's namespace: connections queued at a worker that closes its listener at its cap are reset (the client retries) instead of moved to another worker",
  },
  "no-netns": { type: "boolean", help: "stay in this network namespace (as root the bench takes one of its own)" },
  "no-floor": {
    type: "boolean",
    help: `skip the baseline: bare uWebSockets.js in one process holding up to ${FLOOR_MAX_CLIENTS.toLocaleString("en-US")} of the same clients, measured first, whose RSS per connection the gateway's is reported against`,
  },
  out: std("out", { help: "the report's file (default loadtest/results/million.md, and .json beside it)" }),
  "no-write": std("no-write"),
  quick: std("quick"),
});

/** The latency windows of progress lines [from, to), added up, with the largest window maximum per line. */
function phaseOf(lines: ProgressLine[], from: number, to: number, gapMs: number): Phase {
  const all = new LatencyStats();
  let behind = 0;
  for (const l of lines.slice(from, to)) {
    const w = LatencyStats.fromJSON(l.window);
    all.add(w);
    if (w.count > 0 && w.max / 1000 > gapMs) behind++;
  }
  return {
    deliveries: all.count,
    p50Ms: all.percentileUs(50) / 1000,
    p99Ms: all.percentileUs(99) / 1000,
    maxMs: all.max / 1000,
    meanMs: all.meanUs / 1000,
    secondsOverGap: behind,
    seconds: to - from,
  };
}

const rssOf = (pids: number[]): number => groupStat(pids).rssBytes;

/** Open files of each worker (its sockets and about 30 more): the fewest and the most, and the count per worker. */
function filesPerWorker(pids: number[]): { min: number; max: number; each: number[] } {
  const each = pids.map((p) => fdsOf(p) || 0); // 0 for a worker gone meanwhile
  return { min: Math.min(...each), max: Math.max(...each), each };
}

/**
 * In the bench's own namespace (root), net.ipv4.tcp_migrate_req=1 (per namespace; Linux 5.14+): a connection
 * still queued at a listener that closes (a worker at its cap) moves to another worker's listener instead of
 * being reset. Returns the value in force, or undefined where it cannot be read.
 */
function migrateQueued(on: boolean): number | undefined {
  const file = "/proc/sys/net/ipv4/tcp_migrate_req";
  try {
    if (process.env.FGW_IN_NETNS) writeFileSync(file, on ? "1" : "0");
    return Number(readFileSync(file, "utf8").trim());
  } catch {
    return undefined;
  }
}

/** The gateway's memory right after a full collection in each of its processes, summed (gc-on-signal.cjs). */
type Collected = { rss: number; heapTotal: number; heapUsed: number; newSpace: number };

/**
 * A full collection in each of `pids` (SIGUSR2: gc-on-signal.cjs, preloaded with --expose-gc), and the memory
 * each reports right after it to `dir`, summed.
 */
async function collected(pids: number[], dir: string): Promise<Collected> {
  const t = Date.now();
  for (const p of pids) process.kill(p, "SIGUSR2");
  const read = (p: number): (Collected & { at: number }) | undefined => {
    try {
      return JSON.parse(readFileSync(join(dir, `${p}.json`), "utf8")) as Collected & { at: number };
    } catch {
      return undefined; // not written yet (or half written: read again)
    }
  };
  const reports = await until(
    () => {
      const rs = pids.map(read);
      return rs.every((r) => r && r.at >= t) ? (rs as Collected[]) : undefined;
    },
    120_000,
    "every gateway process's memory after a full collection",
  );
  const sum = (k: keyof Collected): number => reports.reduce((a, r) => a + r[k], 0);
  return { rss: sum("rss"), heapTotal: sum("heapTotal"), heapUsed: sum("heapUsed"), newSpace: sum("newSpace") };
}

/** The workers' JS heap in use, summed (fanout_worker_state{what="heap_used_bytes"} of every worker). */
async function heapUsed(url: string): Promise<number> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(30_000) })).text();
  let sum = 0;
  for (const m of text.matchAll(/^fanout_worker_state\{[^}]*what="heap_used_bytes"[^}]*\} (\S+)$/gm)) sum += Number(m[1]);
  return sum;
}

/** Median time and body size of three GETs (the primary's fan-in of every worker's metrics). */
async function timeGet(url: string): Promise<{ ms: number; bytes: number }> {
  const runs: { ms: number; bytes: number }[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    const r = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    const body = await r.text();
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status} ${body.slice(0, 200)}`);
    runs.push({ ms: performance.now() - t0, bytes: body.length });
  }
  return runs.sort((a, b) => a.ms - b.ms)[1]!;
}

runBench(BENCH, async ({ flags: v, argv }) => {
  const code = inOwnNetns(argv, log);
  if (code !== null) return code;
  const migrate = migrateQueued(!v["no-migrate"]);
  const procs = v.procs ?? Math.max(1, Math.ceil(v.clients / PER_PROCESS));
  const workers = v.workers ?? Math.max(2, Math.ceil(v.clients / PER_PROCESS));
  const per = Math.ceil(v.clients / procs);
  const maxPending = v["max-pending"] || Math.min(256, Math.max(16, Math.floor(PENDING_BUDGET / procs)));
  const total = per * procs;
  const askedGapMs = 1000 / v.rate;
  const report = reportPath(v, "million.md");
  const work = mkdtempSync(join(tmpdir(), "fgw-bench-million-"));
  const gcDir = join(work, "gc");
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? "").split(" ").filter(Boolean);
  mkdirSync(gcDir);
  const progressFile = join(work, "progress.jsonl");
  let nats: Awaited<ReturnType<typeof startNats>> | undefined;
  let gw: GatewayHandle | undefined;
  let sub: Proc | undefined;
  let lowMemory = "";
  const stopGuard = memoryGuard(v["min-free-mb"] * 1048576, (a) => {
    lowMemory = `available memory fell to ${(a / 1048576).toFixed(0)} MB (under --min-free-mb ${v["min-free-mb"]}): run stopped`;
    log(lowMemory);
    sub?.child.kill("SIGKILL");
  });
  const cleanup = async (): Promise<void> => {
    stopGuard();
    if (sub) await sub.stop(5_000);
    await gw?.stop();
    await nats?.stop();
    rmSync(work, { recursive: true, force: true });
  };

  return guarded(log, 45 * 60_000, cleanup, async () => {
    let floor: Floor | undefined;
    if (!v["no-floor"]) {
      floor = await uwsFloor(Math.min(total, FLOOR_MAX_CLIENTS), work, nodeArgs);
      log(`baseline: bare uWebSockets.js holds ${fmt(floor.clients)} sockets for ${floor.perConnB.toFixed(0)} B each`);
    }
    const k0 = readKernelMem();
    nats = await startNats();
    const t0 = performance.now();
    gw = await startGateway({
      natsUrl: nats.url,
      workers,
      // BENCH_NODE_ARGS (e.g. `--max-semi-space-size=1`) reach every gateway process, as in common.ts.
      nodeArgs: [...nodeArgs, "--expose-gc", "--require", GC_ON_SIGNAL],
      logLevel: "info",
      inheritStderr: true,
      readyTimeoutMs: 600_000,
      env: { FGW_GC_REPORT_DIR: gcDir, PUBLISH_RATE: "-1", WORKER_START_WAVE: String(v.wave), WORKER_MAX_CONNECTIONS: v["worker-cap"] },
      args: ["--max-connections-per-ip=-1", "--connect-rate-per-ip=-1", "--frame-rate=-1", "--read-rate-per-ip=-1"],
    });
    const startS = (performance.now() - t0) / 1000;
    const gwPid = gw.process.pid!;
    const gwPids = (): number[] => treePids(gwPid);
    await settledRss(gwPids);
    const workerPids = childPids(gwPid);
    const workerRss = workerPids.map((p) => procStat(p)?.rssBytes ?? 0);
    const idle = {
      primaryMB: (procStat(gwPid)?.rssBytes ?? 0) / 1048576,
      workerMeanMB: workerRss.reduce((a, b) => a + b, 0) / workerRss.length / 1048576,
      workerMaxMB: Math.max(...workerRss) / 1048576,
    };
    const rssIdle = rssOf(gwPids());
    const heapIdle = await heapUsed(gw.url);
    const gcIdle = await collected(gwPids(), gcDir);
    const metricsIdle = await timeGet(`${gw.url}/metrics`);
    const statsIdle = await timeGet(`${gw.url}/v1/stats`);
    log(
      `gateway ready in ${startS.toFixed(1)} s with ${workers} workers (waves of ${v.wave}); idle worker ${idle.workerMeanMB.toFixed(1)} MB, primary ${idle.primaryMB.toFixed(1)} MB; /metrics ${metricsIdle.ms.toFixed(0)} ms, /v1/stats ${statsIdle.ms.toFixed(0)} ms`,
    );

    const k1 = readKernelMem();
    const json = join(work, "sub.json");
    const tc = performance.now();
    sub = runNode([
      SUB_CLI,
      "--engine",
      "native",
      "-c",
      String(procs),
      "-n",
      String(per),
      "-p",
      String(gw.port),
      "--channel",
      CHANNEL,
      "-d",
      String(40 * 60),
      // More than will ever be sent: sub-cluster ends when told (below), not at a publisher's end marker.
      "--expect",
      String(NEVER),
      "--idle",
      "0",
      "--json",
      json,
      "--progress",
      progressFile,
      "--quiet",
      ...(v.ramp > 0 ? ["--ramp", String(v.ramp)] : []),
      "--max-pending",
      String(maxPending),
    ]);
    const s = sub;
    const failIfGone = (): void => {
      if (lowMemory) throw new Error(lowMemory);
      if (s.child.exitCode !== null || s.child.signalCode !== null) throw new Error(`sub-cluster exited early: ${s.out().slice(-3000)}`);
    };
    let shown = 0;
    await until(
      () => {
        failIfGone();
        const last = progressLines(progressFile).at(-1);
        if (last && performance.now() - shown > 15_000) {
          shown = performance.now();
          log(`  ${last.s.toFixed(0)} s: ${fmt(last.connected)} subscribed; available memory ${(readKernelMem().availableB / 2 ** 30).toFixed(1)} GiB`);
        }
        return (last && last.connected >= total) || undefined;
      },
      Math.max(180_000, total * 2),
      `${fmt(total)} clients subscribed`,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${s.out().slice(-2500)}`);
    });
    const connectS = (performance.now() - tc) / 1000;
    const spread = filesPerWorker(workerPids);
    const full = (await scrapeMetrics(gw.url, 120_000)).fanout_workers_full ?? NaN;
    log(`${fmt(total)} clients subscribed in ${connectS.toFixed(1)} s; open files per worker ${fmt(spread.min)} to ${fmt(spread.max)}`);
    const clientPids = (): number[] => treePids(s.child.pid!).slice(1);
    await settledRss(() => [...gwPids(), ...clientPids()]);
    const k2 = readKernelMem();
    const rssConnected = rssOf(gwPids());
    const heapConnected = await heapUsed(gw.url);
    const gcConnected = await collected(gwPids(), gcDir);
    const perConn = (k: keyof Collected): number => (gcConnected[k] - gcIdle[k]) / total;
    const clientRss = rssOf(clientPids());
    const natsRss = procStat(nats.proc.pid!)?.rssBytes ?? 0;
    const kernel = perSocket(k1, k2, Math.max(1, k2.tcpInUse - k1.tcpInUse));
    const metricsConnected = await timeGet(`${gw.url}/metrics`);
    const idleCpu = new TreeCpu(gwPid).start();
    await new Promise((r) => setTimeout(r, 5_000)); // a fixed idle window: what holding the sockets costs
    const idleCpuPct = idleCpu.end().nodePct;
    log(
      `gateway RSS ${(rssIdle / 1048576).toFixed(0)} → ${(rssConnected / 1048576).toFixed(0)} MB (${((rssConnected - rssIdle) / total).toFixed(0)} B per connection, of which JS heap ${((heapConnected - heapIdle) / total).toFixed(0)} B); after a full collection ${perConn("rss").toFixed(0)} B per connection (JS heap in use ${perConn("heapUsed").toFixed(0)} B, heap committed ${perConn("heapTotal").toFixed(0)} B of which young generation ${perConn("newSpace").toFixed(0)} B); kernel ${kernel.perSocketB.toFixed(0)} B per socket over ${fmt(kernel.sockets)} sockets; idle CPU ${idleCpuPct.toFixed(1)} %`,
    );

    // One message to all: from the publish until the progress lines count every client's delivery.
    const lines0 = progressLines(progressFile).length;
    const cpu1 = new TreeCpu(gwPid).start();
    const natsCpu1 = new TreeCpu(nats.proc.pid!).start();
    const pub1 = runNode([PUB_CLI, "-t", "1000", "-n", "1", "-c", "1", "-p", "1", "--port", String(gw.port), "--channel", CHANNEL, "--quiet"]);
    const lines1 = await until(
      () => {
        failIfGone();
        const ls = progressLines(progressFile);
        return (ls.at(-1)?.received ?? 0) >= total ? ls.length : undefined;
      },
      300_000,
      "the one message delivered to every client",
    );
    const c1 = cpu1.end();
    const n1 = natsCpu1.end();
    await bounded(pub1, 30_000);
    const one = phaseOf(progressLines(progressFile), lines0, lines1, Infinity);
    log(`one message to all: p50 ${one.p50Ms.toFixed(0)} / p99 ${one.p99Ms.toFixed(0)} / max ${one.maxMs.toFixed(0)} ms; gateway CPU ${c1.nodeS.toFixed(2)} s`);

    // The steady rate: a message every gapMs for --steady seconds. A rate the machine cannot deliver (one message
    // takes longer to reach everyone than the gap) is slowed to one message per 1.5 × that time, whole seconds,
    // and the report says so: the question is then whether that rate holds without anyone falling behind.
    const gapMs = one.maxMs < askedGapMs ? askedGapMs : Math.ceil((1.5 * one.maxMs) / 1000) * 1000;
    if (gapMs !== askedGapMs)
      log(
        `one message takes ${(one.maxMs / 1000).toFixed(1)} s to reach all: the steady phase sends one every ${gapMs / 1000} s instead of ${askedGapMs / 1000} s`,
      );
    const steadyMsgs = Math.max(2, Math.round((v.steady * 1000) / gapMs));
    const expected = total * (1 + steadyMsgs);
    const cpu2 = new TreeCpu(gwPid).start();
    const natsCpu2 = new TreeCpu(nats.proc.pid!).start();
    const pub2 = runNode([
      PUB_CLI,
      "-t",
      String(Math.round(gapMs)),
      "-n",
      "1",
      "-c",
      "1",
      "-p",
      String(steadyMsgs),
      "--port",
      String(gw.port),
      "--channel",
      CHANNEL,
      "--quiet",
    ]);
    const allIn = await until(
      () => {
        failIfGone();
        return (progressLines(progressFile).at(-1)?.received ?? 0) >= expected || undefined;
      },
      (v.steady + 300) * 1000,
      "every steady message delivered to every client",
    ).catch(() => false);
    const c2 = cpu2.end();
    const n2 = natsCpu2.end();
    await bounded(pub2, 30_000);
    if (lowMemory) throw new Error(lowMemory);
    const steady = phaseOf(progressLines(progressFile), lines1, progressLines(progressFile).length, gapMs);
    // sub-cluster runs until told (it has no --expect: the count of steady messages was settled only now).
    s.child.kill("SIGINT");
    const end = await bounded(s, 90_000);
    const r = JSON.parse(readFileSync(json, "utf8")) as SubResult;
    const m = await scrapeMetrics(gw.url, 120_000);
    const res: MillionResult = {
      bench: "million",
      at: new Date().toISOString(),
      command: commandLine("million", argv),
      revision: revision(),
      load: loadAvg(),
      cores: cpus().length,
      netns: !!process.env.FGW_IN_NETNS,
      clients: total,
      workers,
      procs,
      wave: v.wave,
      nodeArgs,
      ramp: v.ramp,
      maxPending,
      ...(floor ? { floor } : {}),
      cap: {
        setting: v["worker-cap"],
        cap: Number(gw.logs.find((l) => l.msg === "worker ready")?.connectionCap) || undefined,
        migrate,
        filesPerWorker: spread,
        reached: m.fanout_worker_cap_reached_total ?? NaN,
        fullConnected: full,
      },
      startS,
      connectS,
      idle: { ...idle, metricsMs: metricsIdle.ms, metricsBytes: metricsIdle.bytes, statsMs: statsIdle.ms, metricsConnectedMs: metricsConnected.ms },
      rss: {
        idleMB: rssIdle / 1048576,
        connectedMB: rssConnected / 1048576,
        perConnB: (rssConnected - rssIdle) / total,
        heapPerConnB: (heapConnected - heapIdle) / total,
        gc: {
          idleMB: gcIdle.rss / 1048576,
          connectedMB: gcConnected.rss / 1048576,
          perConnB: perConn("rss"),
          heapPerConnB: perConn("heapUsed"),
          heapCommittedPerConnB: perConn("heapTotal"),
          youngPerConnB: perConn("newSpace"),
        },
        clientsMB: clientRss / 1048576,
        natsMB: natsRss / 1048576,
      },
      kernel: { ...kernel, availableBeforeMB: k0.availableB / 1048576, availableConnectedMB: k2.availableB / 1048576 },
      idleCpuPct,
      one: { ...one, gatewayCpuS: c1.nodeS, natsCpuS: n1.brokerS, usPerDelivery: (c1.nodeS * 1e6) / Math.max(1, one.deliveries) },
      steady: {
        ...steady,
        messages: steadyMsgs,
        rate: 1000 / gapMs,
        askedRate: v.rate,
        gatewayCpuS: c2.nodeS,
        gatewayCpuPct: c2.nodePct,
        natsCpuS: n2.brokerS,
        usPerDelivery: (c2.nodeS * 1e6) / Math.max(1, steady.deliveries),
      },
      counts: {
        received: r.counts.received,
        expected,
        // sub-cluster counts loss against its --expect (never reached here): loss is what did not arrive of what was sent.
        lost: Math.max(0, expected - r.counts.distinct),
        duplicated: r.counts.duplicated,
        outOfOrder: r.counts.outOfOrder,
        connectFailures: r.counts.connectFailures,
        failuresByCause: r.failures ?? {},
        reconnects: r.counts.reconnects,
        subErrors: r.counts.subErrors,
        dropped: m.fanout_deliveries_dropped_total ?? NaN,
        slowConsumerSwitches: m.fanout_slow_consumer_switches_total ?? NaN,
        slowConsumerClosed: m.fanout_slow_consumer_closed_total ?? NaN,
      },
      cut: end.cut || !allIn,
    };
    const md = millionReport(res);
    if (report) {
      writeReport(report, md + "\n");
      writeReport(sibling(report, ".json"), JSON.stringify(res, null, 2) + "\n");
    }
    console.log(md);
    console.log(JSON.stringify(res));
    return errorsOf(res) === 0 ? 0 : 1;
  });
});
