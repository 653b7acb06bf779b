import { monitorEventLoopDelay } from "node:perf_hooks";
import client from "prom-client";

const RESOLUTION_MS = 10;

/** A number read when metrics are collected (a table's size, a heap figure). */
export type StateSource = () => number;

/** Where a feature adds the sizes of its tables, read at each scrape through their owners' getters. */
export interface WorkerState {
  add(sources: Record<string, StateSource>): void;
}

/**
 * `fanout_worker_state{worker,pid,what}`: one worker's own figures, labelled so that the primary's aggregation
 * keeps each worker apart (the default process metrics are summed or averaged over workers). `what` is
 * `heap_used_bytes`, `active_handles`, `event_loop_lag_mean_ms` and `event_loop_lag_max_ms` (over the time
 * since the previous collection), and one entry per table the worker's features add (`hub_feeds`,
 * `ip_table_entries`, …), so that a soak run can see whether any of them grows.
 */
export function registerWorkerState(ids: { worker: number; pid: number }, registry: client.Registry = client.register): WorkerState {
  const lag = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  lag.enable();
  const all: Record<string, StateSource> = {
    heap_used_bytes: () => process.memoryUsage().heapUsed,
    active_handles: () => process.getActiveResourcesInfo().length,
    // The histogram's delays include its own timer period: only what exceeds it is lag.
    event_loop_lag_mean_ms: () => Math.max(0, lag.mean / 1e6 - RESOLUTION_MS),
    event_loop_lag_max_ms: () => Math.max(0, lag.max / 1e6 - RESOLUTION_MS),
  };
  const worker = String(ids.worker);
  const pid = String(ids.pid);
  new client.Gauge({
    name: "fanout_worker_state",
    help: "Per-worker figures (heap, handles, event-loop lag since the last scrape) and sizes of the worker's tables, by worker and pid",
    labelNames: ["worker", "pid", "what"] as const,
    registers: [registry],
    collect() {
      for (const [what, read] of Object.entries(all)) {
        const v = read();
        this.labels(worker, pid, what).set(Number.isFinite(v) ? v : 0);
      }
      lag.reset();
    },
  });
  return {
    add(sources) {
      Object.assign(all, sources);
    },
  };
}
