// The sub-cluster master: plans source addresses, measures this host's clock against the server, forks
// the processes, gathers their windows every second (printing the live line), decides when the run is
// over, and prints the cumulative report — with the counts of a process that died taken from its last tick.
import { appendFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import type { SubOptions } from "./options.js";
import type { FromWorker, ToolDelay, ToWorker, WorkerCounts, WorkerReport } from "./ipc.js";
import { ensureNative, startProc, type WorkerProc } from "./procs.js";
import { CpuMeter, CpuTrack, fmtOffset, LatencyStats, measureGatewayClock, measureRedisClock, safeHostId, type ClockEstimate } from "./shared/mod.js";
import { addCounts, addTally, clockStatus, emptyCounts, type ClockSection, type SubResult } from "./result.js";
import { TAG, liveLine, reportLines } from "./report.js";
import { planAddresses, type AddressPlan } from "./addresses.js";
import { openFilesLimit } from "../../gateway/src/limits/listen-gate.js";
import type { PublisherClock } from "./receiver.js";

const FINAL_TIMEOUT_MS = 30_000;

type Proc = {
  name: string;
  proc: WorkerProc;
  cpu: CpuTrack;
  connected: number;
  started: number;
  done: boolean;
  idleMs: number;
  lastCpu: number;
  errorShown: boolean;
  /** The latest tick's report: what the process had counted by then. */
  last: WorkerReport | null;
  lastAtS: number;
  final: (WorkerReport & { crashed?: string }) | null;
  exit: string | null;
};

export type MasterIO = { log(line: string): void };

/** One line of `--progress`: the live line's figures, with that second's latency window whole. */
export type ProgressLine = { s: number; connected: number; clients: number; received: number; window: ReturnType<LatencyStats["toJSON"]> };

/** Messages received so far by every process (each tick carries its process's totals). */
const received = (procs: readonly Proc[]): number => procs.reduce((a, p) => a + (p.last?.counts.received ?? 0), 0);

function writeProgress(file: string, line: ProgressLine): void {
  appendFileSync(file, JSON.stringify(line) + "\n");
}

/** This host's offset to the server the clients talk to, or the reason there is none. */
async function measureClock(opts: SubOptions): Promise<ClockEstimate | string> {
  if (opts.noClock) return "--no-clock";
  const host = opts.hosts[0]!;
  if (opts.target === "gateway") return measureGatewayClock(host, opts.port, opts.path);
  if (opts.target === "redis") return measureRedisClock(host, opts.port);
  return `the ${opts.target} target offers no time to compare clocks with`;
}

/** Runs a whole sub-cluster run; resolves with the result once every process has reported. */
export async function runMaster(opts: SubOptions, io: MasterIO = { log: (l) => console.log(l) }): Promise<SubResult> {
  const startedAt = new Date();
  const t0 = performance.now();
  const total = new LatencyStats();
  const current = new LatencyStats();
  const masterCpu = new CpuMeter();
  const masterTrack = new CpuTrack("master");
  const clients = opts.processes * opts.clientsPerProcess;
  const notes: string[] = [];
  const note = (s: string): void => {
    notes.push(s);
    io.log(`${TAG}${s}`);
  };
  const url = ["gateway", "socketio", "centrifuge"].includes(opts.target)
    ? `ws://${opts.hosts.join(",")}:${opts.port}`
    : `${opts.target}://${opts.hosts.join(",")}:${opts.port}`;
  io.log(
    `${TAG}sub-cluster: ${opts.processes} processes × ${opts.clientsPerProcess} clients → ${url} channels ${opts.channels.join(",")}` +
      (["gateway", "socketio", "centrifuge"].includes(opts.target) ? ` (${opts.engine} engine)` : ""),
  );

  const wsLike = opts.target === "gateway" || opts.target === "socketio" || opts.target === "centrifuge";
  const plan: AddressPlan = wsLike
    ? planAddresses(opts.hosts, opts.port, clients, opts.localAddresses)
    : { hosts: opts.hosts.map((host) => ({ host, clients: 0, sources: [undefined] })), notes: [], warnings: [] };
  for (const n of plan.notes) note(n);
  for (const w of plan.warnings) note(`WARNING: ${w}`);
  const fdLimit = openFilesLimit();
  if (fdLimit !== undefined && opts.clientsPerProcess + 64 > fdLimit) {
    note(
      `WARNING: each process is to hold ${opts.clientsPerProcess} connections but may open only ${fdLimit} files (ulimit -n): expect EMFILE; use -c ${Math.ceil(clients / (fdLimit - 64))} or more processes`,
    );
  }

  const clock = await measureClock(opts);
  const clockOffsetUs = typeof clock === "string" ? null : clock.offsetUs;
  if (typeof clock === "string") io.log(`${TAG}Clock: no offset to the server (${clock}); latencies from publishers on other hosts will be uncorrected`);
  else
    io.log(
      `${TAG}Clock: this host (${hostname()}) is ${fmtOffset(-clock.offsetUs)} from ${clock.reference} (± ${Math.round(clock.rttUs / 2)} µs, best of ${clock.samples} exchanges)`,
    );

  const native = wsLike && opts.engine === "native";
  if (native) {
    const missing = ensureNative();
    if (missing) throw new Error(missing);
  }
  const procs: Proc[] = [];
  for (let i = 0; i < opts.processes; i++) {
    const name = `sub-${i + 1}`;
    // Messages arrive on later turns, once `p` exists.
    const proc = startProc(native, (m: FromWorker) => {
      const w = LatencyStats.fromJSON(m.window);
      total.add(w);
      p.cpu.add(m.cpuPct, w.count > 0);
      if (m.firstError && !p.errorShown) {
        p.errorShown = true;
        io.log(`${TAG}${name}: first error: ${m.firstError}`);
      }
      if (m.type === "tick") {
        current.add(w);
        Object.assign(p, {
          connected: m.connected,
          started: m.started,
          done: m.done,
          idleMs: m.idleMs,
          lastCpu: m.cpuPct,
          last: m,
          lastAtS: (performance.now() - t0) / 1000,
        });
      } else {
        p.final = m;
      }
    });
    const p: Proc = {
      name,
      proc,
      cpu: new CpuTrack(`${name} (pid ${proc.child.pid})`),
      connected: 0,
      started: 0,
      done: false,
      idleMs: -1,
      lastCpu: 0,
      errorShown: false,
      last: null,
      lastAtS: 0,
      final: null,
      exit: null,
    };
    procs.push(p);
    p.proc.child.on("exit", (code, signal) => {
      p.exit = signal ? `signal ${signal}` : `code ${code}`;
    });
    p.proc.send({ type: "start", index: i, opts, plan, clockOffsetUs } satisfies ToWorker);
  }

  const reason = await new Promise<string>((resolve) => {
    let lastPrint = performance.now();
    const onSigint = (): void => finish("interrupt");
    process.once("SIGINT", onSigint);
    const timer = setInterval(() => {
      const now = performance.now();
      const elapsedS = Math.round((now - t0) / 1000);
      const connected = procs.reduce((a, p) => a + p.connected, 0);
      const rate = current.count / ((now - lastPrint) / 1000);
      lastPrint = now;
      const mc = masterCpu.sample();
      masterTrack.add(mc, current.count > 0);
      if (!opts.quiet) io.log(liveLine(elapsedS, connected, clients, rate, current, Math.max(mc, ...procs.map((p) => p.lastCpu))));
      if (opts.progress) writeProgress(opts.progress, { s: (now - t0) / 1000, connected, clients, received: received(procs), window: current.toJSON() });
      current.reset();
      if (procs.every((p) => p.exit !== null)) return finish("all processes exited");
      if (opts.durationS > 0 && now - t0 >= opts.durationS * 1000) return finish("duration");
      if (procs.every((p) => p.done || p.exit !== null)) return finish(opts.expect !== null ? "expected messages received" : "end markers received");
      const heard = procs.filter((p) => p.idleMs >= 0);
      if (opts.idleS > 0 && heard.length > 0 && procs.every((p) => p.idleMs < 0 || p.idleMs >= opts.idleS * 1000)) return finish("idle");
    }, 1000);
    function finish(why: string): void {
      clearInterval(timer);
      process.off("SIGINT", onSigint);
      resolve(why);
    }
  });

  // Each process reports first and closes its clients afterwards; a process that is gone already left its last tick.
  for (const p of procs) if (p.exit === null && p.proc.alive()) p.proc.send({ type: "stop" } satisfies ToWorker);
  const deadline = Date.now() + FINAL_TIMEOUT_MS;
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (procs.every((p) => p.final || p.exit !== null) || Date.now() > deadline) {
        clearInterval(check);
        resolve();
      }
    }, 20);
  });
  // Processes close their clients after reporting (bounded); give them that long before killing them.
  await Promise.race([
    Promise.all(procs.map((p) => (p.exit !== null ? null : new Promise((r) => p.proc.child.once("exit", r))))),
    new Promise((r) => setTimeout(r, 7_000)),
  ]);
  for (const p of procs) if (p.exit === null) p.proc.child.kill();

  const counts: WorkerCounts = emptyCounts();
  const failures: Record<string, number> = {};
  const neverConnected: Record<string, number> = {};
  const publishers = new Map<string, PublisherClock>();
  const delay: ToolDelay = { count: 0, sumUs: 0, maxUs: 0 };
  let recvClock: "kernel" | "user" | null = null;
  let messagesUs: { first: number; last: number } | undefined;
  for (const p of procs) {
    const r = p.final ?? p.last;
    if (p.final?.crashed) note(`WARNING: ${p.name} ${p.final.crashed}; it reported what it had counted before exiting`);
    if (!p.final) {
      note(
        r
          ? `WARNING: ${p.name} ended (${p.exit ?? "no answer"}) without a final report: its counts are from its last report, ${p.lastAtS.toFixed(0)} s into the run`
          : `WARNING: ${p.name} ended (${p.exit ?? "no answer"}) before it reported anything: its ${opts.clientsPerProcess} clients are missing from the counts`,
      );
    }
    if (!r) {
      counts.planned += opts.clientsPerProcess;
      continue;
    }
    addCounts(counts, r.counts);
    addTally(failures, r.failures);
    addTally(neverConnected, r.neverConnected);
    for (const pub of r.publishers) publishers.set(pub.id, pub);
    if (r.messagesUs)
      messagesUs = messagesUs
        ? { first: Math.min(messagesUs.first, r.messagesUs.first), last: Math.max(messagesUs.last, r.messagesUs.last) }
        : { ...r.messagesUs };
    if (r.recvClock) recvClock = recvClock === "user" ? "user" : r.recvClock;
    if (r.toolDelay) {
      delay.count += r.toolDelay.count;
      delay.sumUs += r.toolDelay.sumUs;
      delay.maxUs = Math.max(delay.maxUs, r.toolDelay.maxUs);
    }
  }
  masterTrack.add(masterCpu.sample(), false);
  const pubs = [...publishers.values()];
  const clockSection: ClockSection = {
    host: safeHostId(hostname()),
    self: typeof clock === "string" ? null : clock,
    ...(typeof clock === "string" ? { selfReason: clock } : {}),
    publishers: pubs,
    status: clockStatus(pubs),
  };
  const result: SubResult = {
    version: 1,
    tool: "sub-cluster",
    target: opts.target,
    engine: wsLike ? opts.engine : opts.target,
    hosts: [...opts.hosts],
    port: opts.port,
    channels: [...opts.channels],
    processes: opts.processes,
    clientsPerProcess: opts.clientsPerProcess,
    startedAt: startedAt.toISOString(),
    durationMs: Math.round(performance.now() - t0),
    stopReason: reason,
    counts,
    failures,
    neverConnected,
    notes,
    clock: clockSection,
    receiveClock: recvClock ? { source: recvClock, toolDelay: delay } : { source: "process" },
    ...(messagesUs ? { messagesUs } : {}),
    latency: total.toJSON(),
    cpu: [...procs.map((p) => p.cpu.summary()), masterTrack.summary()],
  };
  for (const l of reportLines(result)) io.log(l);
  if (opts.json) {
    writeFileSync(opts.json, JSON.stringify(result, null, 2) + "\n");
    io.log(`${TAG}wrote ${opts.json}`);
  }
  return result;
}
