// Messages between the pub-cluster master and its processes (Node IPC, JSON).
import type { PubOptions } from "./options.js";
import type { LatencySnapshot } from "../../subtools/src/shared/mod.js";

export type ToPubWorker = { type: "start"; index: number; opts: PubOptions; clockOffsetUs: number | null } | { type: "stop" };

export type PubCounts = {
  sent: number;
  acked: number;
  failed: number;
  endMarkers: number;
  endMarkersFailed: number;
  /** Passes that started more than one interval late (the publisher could not keep the schedule). */
  lateTicks: number;
};

export type FromPubWorker =
  | { type: "tick"; index: number; counts: PubCounts; inFlight: number; window: LatencySnapshot; cpuPct: number; firstError: string | null }
  | {
      type: "final";
      index: number;
      counts: PubCounts;
      window: LatencySnapshot;
      cpuPct: number;
      /** Epoch ms of the first send and of the last settled publish, for the rate. */
      firstSendMs: number;
      lastDoneMs: number;
      firstError: string | null;
    };
