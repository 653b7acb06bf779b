// Messages between the sub-cluster master and its processes (Node IPC, JSON).
import type { SubOptions } from "./options.js";
import type { LatencySnapshot } from "./shared/mod.js";
import type { AddressPlan } from "./addresses.js";
import type { PublisherClock } from "./receiver.js";

export type ToWorker = { type: "start"; index: number; opts: SubOptions; plan: AddressPlan; clockOffsetUs: number | null } | { type: "stop" };

/** Per-process totals. Sent with every tick too, so a process that dies still leaves what it counted. */
export type WorkerCounts = {
  /** Clients this process was to hold (-n). */
  planned: number;
  /** Clients started so far (fewer than planned while ramping). */
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

export type WorkerReport = {
  index: number;
  counts: WorkerCounts;
  /** Failed connection attempts by cause (ECONNREFUSED, EADDRNOTAVAIL, EMFILE, HTTP_429…). */
  failures: Record<string, number>;
  /** Clients that never subscribed, by the cause of their last failed attempt ("pending" when none failed yet). */
  neverConnected: Record<string, number>;
  publishers: PublisherClock[];
  window: LatencySnapshot;
  cpuPct: number;
  firstError: string | null;
  /** Receive times (µs since the epoch) of this process's first and last message, end markers aside (Node engines). */
  messagesUs?: { first: number; last: number };
  /** Native engine: where receive times came from ("kernel": SO_TIMESTAMPNS on every read; "user": some reads had none). */
  recvClock?: "kernel" | "user";
  /** Native engine: how long after the kernel stamped a chunk this process read it, over the run so far. */
  toolDelay?: ToolDelay;
};

export type ToolDelay = { count: number; sumUs: number; maxUs: number };

export type FromWorker =
  | (WorkerReport & {
      type: "tick";
      /** Clients subscribed right now / started so far. */
      connected: number;
      started: number;
      /** Every client has what it came for (all end markers, or --expect messages). */
      done: boolean;
      /** Milliseconds since the last delivery, or -1 before the first. */
      idleMs: number;
    })
  | (WorkerReport & { type: "final"; crashed?: string });
