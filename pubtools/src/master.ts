// The pub-cluster master: forks the publishers, prints a line a second and the final report.
import { fork, type ChildProcess } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { PubOptions } from "./options.js";
import type { FromPubWorker, PubCounts, ToPubWorker } from "./ipc.js";
import {
  CpuTrack,
  fmtOffset,
  LatencyStats,
  measureGatewayClock,
  measureRedisClock,
  ms3,
  ms6,
  SATURATED_PCT,
  type ClockEstimate,
  type CpuSummary,
  type LatencySnapshot,
} from "../../subtools/src/shared/mod.js";

const WORKER_MAIN = fileURLToPath(new URL("./worker-main.js", import.meta.url));
export const PUB_TAG = "[  pub-master  ] \t";

export type PubResult = {
  version: 1;
  tool: "pub-cluster";
  target: string;
  options: PubOptions;
  counts: PubCounts;
  /** Messages per second from the first send to the last settled publish, over all processes. */
  ratePerS: number;
  durationMs: number;
  /** Publish-ack latency (µs); empty for core NATS, which does not ack. */
  ack: LatencySnapshot;
  cpu: CpuSummary[];
  errors: string[];
  exitedAbnormally: number;
  /** This host's offset to the server (written into the payloads), or null with the reason. */
  clock: ClockEstimate | null;
  clockReason?: string;
};

/** This host's offset to the server the messages go through, or the reason there is none. */
async function measureClock(opts: PubOptions): Promise<ClockEstimate | string> {
  if (opts.noClock) return "--no-clock";
  const host = opts.hosts[0]!;
  if (opts.target === "gateway-ws" || opts.target === "gateway-http") return measureGatewayClock(host, opts.port, opts.path);
  if (opts.target === "redis") return measureRedisClock(host, opts.port);
  return `the ${opts.target} target offers no time to compare clocks with`;
}

type Proc = {
  child: ChildProcess;
  cpu: CpuTrack;
  counts: PubCounts | null;
  inFlight: number;
  final: Extract<FromPubWorker, { type: "final" }> | null;
  exitCode: number | null;
  errorShown: boolean;
};

export async function runPubMaster(opts: PubOptions, log: (l: string) => void = (l) => console.log(l)): Promise<PubResult> {
  const t0 = performance.now();
  const total = new LatencyStats();
  const current = new LatencyStats();
  const errors: string[] = [];
  const mode = opts.sync ? "sync" : `async window ${opts.window}`;
  log(
    `${PUB_TAG}pub-cluster: ${opts.processes} processes × ${opts.passes} passes of ${opts.perInterval} every ${opts.intervalMs}ms → ${opts.target} ${opts.hosts.join(",")}:${opts.port} channels ${opts.channels.join(",")}, ${opts.size} bytes, ${mode}`,
  );

  const clock = await measureClock(opts);
  const clockOffsetUs = typeof clock === "string" ? null : clock.offsetUs;
  log(
    typeof clock === "string"
      ? `${PUB_TAG}Clock: no offset to the server (${clock}); subscribers on other hosts cannot correct their latencies`
      : `${PUB_TAG}Clock: this host is ${fmtOffset(-clock.offsetUs)} from ${clock.reference} (± ${Math.round(clock.rttUs / 2)} µs); sent in every payload as "o"`,
  );
  const procs: Proc[] = [];
  const allDone = new Promise<void>((resolve) => {
    const check = (): void => {
      if (procs.length === opts.processes && procs.every((p) => p.exitCode !== null)) resolve();
    };
    for (let i = 0; i < opts.processes; i++) {
      const child = fork(WORKER_MAIN, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
      const p: Proc = {
        child,
        cpu: new CpuTrack(`pub-${i + 1} (pid ${child.pid})`),
        counts: null,
        inFlight: 0,
        final: null,
        exitCode: null,
        errorShown: false,
      };
      procs.push(p);
      child.on("message", (m: FromPubWorker) => {
        const w = LatencyStats.fromJSON(m.window);
        total.add(w);
        p.counts = m.counts;
        p.cpu.add(m.cpuPct, true);
        if (m.firstError && !p.errorShown) {
          p.errorShown = true;
          errors.push(m.firstError);
          log(`${PUB_TAG}pub-${i + 1}: first error: ${m.firstError}`);
        }
        if (m.type === "tick") {
          current.add(w);
          p.inFlight = m.inFlight;
        } else p.final = m;
      });
      child.on("exit", (code) => {
        p.exitCode = code ?? 1;
        check();
      });
      child.send({ type: "start", index: i, opts, clockOffsetUs } satisfies ToPubWorker);
    }
  });

  const onSigint = (): void => {
    for (const p of procs) if (p.exitCode === null) p.child.send({ type: "stop" } satisfies ToPubWorker);
  };
  process.on("SIGINT", onSigint);
  let lastSent = 0;
  let lastAt = t0;
  const timer = setInterval(() => {
    const now = performance.now();
    const sent = procs.reduce((a, p) => a + (p.counts?.sent ?? 0), 0);
    const acked = procs.reduce((a, p) => a + (p.counts?.acked ?? 0), 0);
    const failed = procs.reduce((a, p) => a + (p.counts?.failed ?? 0), 0);
    const rate = (sent - lastSent) / ((now - lastAt) / 1000);
    lastSent = sent;
    lastAt = now;
    if (!opts.quiet) {
      const ack = current.count
        ? `ack MEAN (current): ${ms3(current.meanUs)} p99 (current): ${ms3(current.percentileUs(99))} MAX (current): ${ms3(current.max)}`
        : "ack (current): n/a";
      log(
        `${PUB_TAG}${Math.round((now - t0) / 1000)}s sent ${sent} (${Math.round(rate)} msg/s) acked ${acked} failed ${failed} in-flight ${procs.reduce((a, p) => a + p.inFlight, 0)} | ${ack}`,
      );
    }
    current.reset();
  }, 1000);
  await allDone;
  clearInterval(timer);
  process.off("SIGINT", onSigint);

  const counts: PubCounts = { sent: 0, acked: 0, failed: 0, endMarkers: 0, endMarkersFailed: 0, lateTicks: 0 };
  let first = Infinity;
  let last = 0;
  let abnormal = 0;
  for (const p of procs) {
    const c = p.final?.counts ?? p.counts;
    if (c) for (const k of Object.keys(counts) as (keyof PubCounts)[]) counts[k] += c[k];
    if (p.final) {
      first = Math.min(first, p.final.firstSendMs);
      last = Math.max(last, p.final.lastDoneMs);
    }
    if (p.exitCode !== 0 || !p.final) abnormal++;
  }
  const spanS = last > first ? (last - first) / 1000 : 0;
  const result: PubResult = {
    version: 1,
    tool: "pub-cluster",
    target: opts.target,
    options: opts,
    counts,
    ratePerS: spanS > 0 ? counts.sent / spanS : counts.sent,
    durationMs: Math.round(performance.now() - t0),
    ack: total.toJSON(),
    cpu: procs.map((p) => p.cpu.summary()),
    errors,
    exitedAbnormally: abnormal,
    clock: typeof clock === "string" ? null : clock,
    ...(typeof clock === "string" ? { clockReason: clock } : {}),
  };
  for (const l of pubReportLines(result, total)) log(l);
  if (opts.json) {
    writeFileSync(opts.json, JSON.stringify(result, null, 2) + "\n");
    log(`${PUB_TAG}wrote ${opts.json}`);
  }
  return result;
}

export function pubReportLines(r: PubResult, ack: LatencyStats): string[] {
  const c = r.counts;
  const out: string[] = [];
  const add = (s: string): void => {
    out.push(PUB_TAG + s);
  };
  add(`Published: ${c.sent} (acked ${c.acked}, failed ${c.failed}) at ${r.ratePerS.toFixed(1)} msg/s`);
  add(
    `End markers: ${c.endMarkers}${c.endMarkersFailed ? ` (${c.endMarkersFailed} failed)` : ""}${c.lateTicks ? `; ${c.lateTicks} passes started more than an interval late` : ""}`,
  );
  if (ack.count) {
    add(`\t ACK MIN: ${ms3(ack.min)}`);
    add(`\t ACK MAX: ${ms3(ack.max)}`);
    add(`\t ACK MEAN: ${ms6(ack.meanUs)}`);
    add(`\t ACK p50: ${ms3(ack.percentileUs(50))}`);
    add(`\t ACK p99: ${ms3(ack.percentileUs(99))}`);
  } else {
    add(`\t ACK: n/a${r.target === "nats" ? " (core NATS does not acknowledge publishes)" : ""}`);
  }
  for (const p of r.cpu) add(`CPU ${p.name}: avg ${p.avgPct.toFixed(1)}% peak ${p.peakPct.toFixed(1)}% of one core`);
  const hot = r.cpu.filter((p) => p.saturatedS > 0);
  if (hot.length) add(`WARNING: load generator saturated: ${hot.map((p) => `${p.name} ${p.saturatedS}s`).join(", ")} above ${SATURATED_PCT}% of a core`);
  if (r.exitedAbnormally) add(`WARNING: ${r.exitedAbnormally} publisher processes ended without a final report`);
  return out;
}
