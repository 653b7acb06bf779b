// The seeded fault schedule: which fault, on what, when. Pure: the same seed, duration and gap give the same
// list. Kinds are drawn in shuffled rounds (every kind once per round), so a run long enough for one round
// injects each kind at least once and the mix stays even over long runs.
import { rng } from "../bench/rng.js";

/** The faults of a run on one 3-node NATS cluster (the default run). */
export const CLUSTER_FAULT_KINDS = [
  "worker-kill",
  "primary-kill",
  "rolling-restart",
  "nats-kill",
  "nats-pause",
  "link-stall",
  "link-delay",
  "client-burst",
  "client-stall",
] as const;
/**
 * The faults of a run on three regions (`--regions`, regions.ts): a region's NATS node killed and restarted,
 * the gateway links into a region cut or delayed, half of the subscribers moved to the next region, and the
 * link between two regions cut while both keep theirs with the third (`region-split`).
 */
export const REGION_FAULT_KINDS = ["region-kill", "region-cut", "region-delay", "region-move", "region-split"] as const;
export const FAULT_KINDS = [...CLUSTER_FAULT_KINDS, ...REGION_FAULT_KINDS] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
/** A fault on the NATS cluster's nodes: not in a regions run (each region is one node; region-kill is its fault). */
export const CLUSTER_ONLY_KINDS: readonly FaultKind[] = ["nats-kill", "nats-pause"];
/** What a `--regions` run draws from by default: the region faults and those on gateways, their links and clients. */
export const REGIONS_DEFAULT_KINDS: readonly FaultKind[] = [...CLUSTER_FAULT_KINDS.filter((k) => !CLUSTER_ONLY_KINDS.includes(k)), ...REGION_FAULT_KINDS];

/** The kinds a run draws from: `given`, else its topology's defaults; a kind of the other topology is refused. */
export function faultKinds(given: readonly string[] | undefined, regions: boolean): FaultKind[] {
  const kinds = (given ?? (regions ? REGIONS_DEFAULT_KINDS : CLUSTER_FAULT_KINDS)) as FaultKind[];
  const wrong = kinds.filter((k) => (regions ? CLUSTER_ONLY_KINDS.includes(k) : (REGION_FAULT_KINDS as readonly string[]).includes(k)));
  if (wrong.length) throw new Error(`--kinds ${wrong.join(",")}: ${regions ? "not in a --regions run (use region-kill)" : "needs --regions"}`);
  return kinds;
}

export type Fault = {
  /** Planned start, ms after the fault phase began (a fault never starts before the previous one ended). */
  atMs: number;
  kind: FaultKind;
  /** Gateway instance (0-2) for worker/primary kills; the region (a, b, c) for region faults. */
  instance: number;
  /** NATS node role for nats-kill/pause: the stream leader, or another node. */
  natsTarget: "leader" | "follower";
  /** How long the fault holds: a NATS node down or stopped, clients not reading. */
  holdMs: number;
  /** Which worker of the instance (index into its live workers) for worker-kill. */
  worker: number;
  /** link-delay: added each way. */
  delayMs: number;
};

export function buildSchedule(o: { seed: number; durationMs: number; meanGapMs: number; kinds: readonly FaultKind[] }): Fault[] {
  const rand = rng(o.seed);
  const int = (n: number) => Math.floor(rand() * n);
  const out: Fault[] = [];
  let round: FaultKind[] = [];
  let at = Math.round(o.meanGapMs * (0.3 + 0.4 * rand()));
  while (at < o.durationMs) {
    if (round.length === 0) {
      round = [...o.kinds];
      for (let i = round.length - 1; i > 0; i--) {
        const j = int(i + 1);
        [round[i], round[j]] = [round[j]!, round[i]!];
      }
    }
    const kind = round.pop()!;
    out.push({
      atMs: at,
      kind,
      instance: int(3),
      natsTarget: rand() < 0.5 ? "leader" : "follower",
      // A NATS node is down or stopped 0.8-2 s (it holds the one NATS lock of overlapping lanes); the rest 1.5-5 s.
      holdMs: kind === "nats-kill" || kind === "nats-pause" ? 800 + int(1_200) : 1_500 + int(3_500),
      worker: int(2),
      delayMs: 50 + int(250),
    });
    at += Math.round(o.meanGapMs * (0.5 + rand()));
  }
  return out;
}
