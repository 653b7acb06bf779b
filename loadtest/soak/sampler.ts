// One soak sample: every worker's own figures and table sizes (the gateway's fanout_worker_state gauge, one
// series per worker and pid), each worker's and the primary's RSS and open file descriptors from /proc, the
// nats-server's RSS, and the stream's consumer count (JetStream stream info).
import { readdirSync, readFileSync } from "node:fs";
import type { JetStreamManager } from "@nats-io/jetstream";
import { parsePrometheus } from "../../gateway/src/http/stats.js";

export type WorkerSample = {
  worker: string;
  pid: number;
  rssBytes: number;
  openFds: number;
  /** Everything the worker reports in fanout_worker_state (heap, handles, lag, table sizes). */
  state: Record<string, number>;
};

export type Sample = {
  /** Seconds since the workload started. */
  t: number;
  workers: WorkerSample[];
  primaryRssBytes: number;
  natsRssBytes: number;
  consumers: number;
  streamMessages: number;
  workerRestarts: number;
};

/** Resident set size of a process (bytes), from /proc/<pid>/status; NaN when it is gone. */
export function rssOf(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Open file descriptors of a process (entries of /proc/<pid>/fd); NaN when it is gone. */
export function fdsOf(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return NaN;
  }
}

export type SamplerTargets = { metricsUrl: string; primaryPid: number; natsPid: number; jsm: JetStreamManager; stream: string };

export async function takeSample(s: SamplerTargets, t: number): Promise<Sample> {
  const res = await fetch(`${s.metricsUrl}/metrics`, { signal: AbortSignal.timeout(10_000) });
  if (!res.ok) throw new Error(`/metrics answered ${res.status}`);
  const prom = parsePrometheus(await res.text());
  const byKey = new Map<string, WorkerSample>();
  for (const p of prom) {
    if (p.name !== "fanout_worker_state") continue;
    const { worker, pid, what } = p.labels;
    if (!worker || !pid || !what) continue;
    const key = `${worker}/${pid}`;
    let w = byKey.get(key);
    if (!w) byKey.set(key, (w = { worker, pid: Number(pid), rssBytes: rssOf(Number(pid)), openFds: fdsOf(Number(pid)), state: {} }));
    w.state[what] = p.value;
  }
  const restarts = prom.find((p) => p.name === "fanout_worker_restarts_total")?.value ?? 0;
  const info = await s.jsm.streams.info(s.stream);
  return {
    t,
    workers: [...byKey.values()].sort((a, b) => a.worker.localeCompare(b.worker)),
    primaryRssBytes: rssOf(s.primaryPid),
    natsRssBytes: rssOf(s.natsPid),
    consumers: info.state.consumer_count,
    streamMessages: info.state.messages,
    workerRestarts: restarts,
  };
}
