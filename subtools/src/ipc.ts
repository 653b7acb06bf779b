// Messages between the sub-cluster master and its processes (Node IPC, JSON).
import type { SubOptions } from "./options.js";
import type { LatencySnapshot } from "./stats.js";

export type ToWorker =
  | { type: "start"; index: number; opts: SubOptions }
  | { type: "stop" };

/** Per-process totals at the end of a run. */
export type WorkerCounts = {
  clients: number;
  everConnected: number;
  peakConnected: number;
  received: number;
  distinct: number;
  expected: number;
  lost: number;
  duplicated: number;
  outOfOrder: number;
  late: number;
  endMarkers: number;
  connectFailures: number;
  reconnects: number;
  subErrors: number;
  badFrames: number;
};

export type FromWorker =
  | {
      type: "tick";
      index: number;
      /** Clients subscribed right now / started so far. */
      connected: number;
      started: number;
      /** Latencies since the previous tick. */
      window: LatencySnapshot;
      cpuPct: number;
      /** Every client has what it came for (all end markers, or --expect messages). */
      done: boolean;
      /** Milliseconds since the last delivery, or -1 before the first. */
      idleMs: number;
      firstError: string | null;
    }
  | { type: "final"; index: number; window: LatencySnapshot; counts: WorkerCounts; cpuPct: number; firstError: string | null };
