// The sub-cluster master: forks the processes, gathers their windows every second (printing the live
// line), decides when the run is over, and prints the cumulative report.
import { fork, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { SubOptions } from "./options.js";
import type { FromWorker, ToWorker, WorkerCounts } from "./ipc.js";
import { LatencyStats } from "./stats.js";
import { CpuMeter, CpuTrack } from "./cpu.js";
import { addCounts, emptyCounts, type SubResult } from "./result.js";
import { TAG, liveLine, reportLines } from "./report.js";

const WORKER_MAIN = fileURLToPath(new URL("./worker-main.js", import.meta.url));
const FINAL_TIMEOUT_MS = 30_000;

type Proc = {
  child: ChildProcess;
  cpu: CpuTrack;
  connected: number;
  started: number;
  done: boolean;
  idleMs: number;
  lastCpu: number;
  errorShown: boolean;
  final: Extract<FromWorker, { type: "final" }> | null;
  exited: boolean;
};

export type MasterIO = { log(line: string): void };

/** Runs a whole sub-cluster run; resolves with the result once every process has reported. */
export async function runMaster(opts: SubOptions, io: MasterIO = { log: (l) => console.log(l) }): Promise<SubResult> {
  const startedAt = new Date();
  const t0 = performance.now();
  const total = new LatencyStats();
  const current = new LatencyStats();
  const masterCpu = new CpuMeter();
  const masterTrack = new CpuTrack("master");
  const clients = opts.processes * opts.clientsPerProcess;
  const url = opts.target === "gateway" ? `ws://${opts.hosts.join(",")}:${opts.port}${opts.path}` : `${opts.target}://${opts.hosts.join(",")}:${opts.port}`;
  io.log(`${TAG}sub-cluster: ${opts.processes} processes × ${opts.clientsPerProcess} clients → ${url} channels ${opts.channels.join(",")}`);

  const procs: Proc[] = [];
  for (let i = 0; i < opts.processes; i++) {
    const child = fork(WORKER_MAIN, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const p: Proc = { child, cpu: new CpuTrack(`sub-${i + 1} (pid ${child.pid})`), connected: 0, started: 0, done: false, idleMs: -1, lastCpu: 0, errorShown: false, final: null, exited: false };
    procs.push(p);
    child.on("message", (m: FromWorker) => {
      if (m.type === "tick") {
        const w = LatencyStats.fromJSON(m.window);
        current.add(w);
        total.add(w);
        p.cpu.add(m.cpuPct, w.count > 0);
        Object.assign(p, { connected: m.connected, started: m.started, done: m.done, idleMs: m.idleMs, lastCpu: m.cpuPct });
        if (m.firstError && !p.errorShown) { p.errorShown = true; io.log(`${TAG}sub-${i + 1}: first error: ${m.firstError}`); }
      } else {
        if (m.firstError && !p.errorShown) { p.errorShown = true; io.log(`${TAG}sub-${i + 1}: first error: ${m.firstError}`); }
        total.add(LatencyStats.fromJSON(m.window));
        p.cpu.add(m.cpuPct, m.window.count > 0);
        p.final = m;
      }
    });
    child.on("exit", () => { p.exited = true; });
    child.send({ type: "start", index: i, opts } satisfies ToWorker);
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
      current.reset();
      if (procs.every((p) => p.exited)) return finish("all processes exited");
      if (opts.durationS > 0 && now - t0 >= opts.durationS * 1000) return finish("duration");
      if (procs.every((p) => p.done || p.exited)) return finish(opts.expect !== null ? "expected messages received" : "end markers received");
      const heard = procs.filter((p) => p.idleMs >= 0);
      if (opts.idleS > 0 && heard.length > 0 && procs.every((p) => p.idleMs < 0 || p.idleMs >= opts.idleS * 1000)) return finish("idle");
    }, 1000);
    function finish(why: string): void {
      clearInterval(timer);
      process.off("SIGINT", onSigint);
      resolve(why);
    }
  });

  // Each process stops its clients and sends a final window and its totals.
  for (const p of procs) if (!p.exited) p.child.send({ type: "stop" } satisfies ToWorker);
  const deadline = Date.now() + FINAL_TIMEOUT_MS;
  await new Promise<void>((resolve) => {
    const check = setInterval(() => {
      if (procs.every((p) => p.final || p.exited) || Date.now() > deadline) { clearInterval(check); resolve(); }
    }, 20);
  });
  for (const p of procs) if (!p.exited) p.child.kill();

  const counts: WorkerCounts = emptyCounts();
  procs.forEach((p, i) => {
    if (p.final) addCounts(counts, p.final.counts);
    else io.log(`${TAG}WARNING: sub-${i + 1} sent no final report; its counts are missing`);
  });
  masterTrack.add(masterCpu.sample(), false);
  const result: SubResult = {
    version: 1,
    tool: "sub-cluster",
    target: opts.target,
    hosts: [...opts.hosts],
    port: opts.port,
    channels: [...opts.channels],
    processes: opts.processes,
    clientsPerProcess: opts.clientsPerProcess,
    startedAt: startedAt.toISOString(),
    durationMs: Math.round(performance.now() - t0),
    stopReason: reason,
    counts,
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
