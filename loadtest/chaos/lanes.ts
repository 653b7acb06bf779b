// Overlapping faults (`--lanes N`): N schedules run side by side, so faults of different kinds hit the system
// at the same time, as in an outage that is more than one thing. Two faults never act on the same thing at
// once: each takes the locks of what it touches (a gateway instance, its links to NATS, the NATS nodes, the
// client processes) before it starts, and waits for them. Pure apart from the timers of the waiting.
import type { Fault, FaultKind } from "./schedule.js";

/** One group of lanes: each of its `lanes` draws faults of `kinds` only, one after another. */
export type LaneGroup = { kinds: readonly FaultKind[]; lanes: number; gapMs?: number };

/**
 * `--overlap`: lanes by what the faults act on, so that every kind gets its share of a run instead of every
 * lane queueing on the slowest kind. NATS faults and the clients' faults each take one lock, so one lane
 * each, with a gap (a NATS fault every ~4 s; the clients' faults are instant or short, and subscribers should
 * not be reconnecting all the time). Link faults (a link each) get three lanes, one per instance on average.
 * Kills and rolling restarts share the three instances' locks: two lanes of kills and three of rolling
 * restarts, each restarting whichever of its instances is free first (faults.ts). More lanes of either made
 * fewer of them: five restart lanes and three kill lanes ran 12 restarts and 44 kills in 4.3 minutes, against
 * 27 and 65 in 6 minutes with these, as restarts queued behind each other instance by instance.
 */
export const OVERLAP_PLAN: readonly LaneGroup[] = [
  { kinds: ["nats-kill", "nats-pause", "region-kill"], lanes: 1, gapMs: 4_000 },
  { kinds: ["client-burst", "client-stall", "region-move"], lanes: 1, gapMs: 3_000 },
  { kinds: ["region-cut", "region-delay", "region-split"], lanes: 2 },
  { kinds: ["link-stall", "link-delay"], lanes: 3 },
  { kinds: ["worker-kill", "primary-kill"], lanes: 2 },
  { kinds: ["rolling-restart"], lanes: 3 },
];

/** What a fault acts on: it holds these for as long as it lasts. */
export function resourcesOf(f: Fault): string[] {
  switch (f.kind) {
    case "worker-kill":
    case "primary-kill":
      return [`gw${f.instance}`];
    case "rolling-restart":
      // Nothing for the whole deploy: it takes each instance's lock in turn as it restarts it (faults.ts), so
      // a second deploy may follow the first one instance behind, as a hotfix rolled out during a deploy does.
      return [];
    case "nats-kill":
    case "nats-pause":
      return ["nats"];
    case "link-stall":
    case "link-delay":
      return [`link${f.instance}`];
    case "client-burst":
    case "client-stall":
    case "region-move":
      return ["clients"];
    // A restarted region waits to be joined to the other two again: no link of any region may be cut meanwhile.
    case "region-kill":
      return ["nats", "region0", "region1", "region2"];
    case "region-cut":
    case "region-delay":
      return [`region${f.instance}`];
    case "region-split":
      return [`region${f.instance % 3}`, `region${(f.instance + 1) % 3}`];
  }
}

/** Named locks, taken all at once in a fixed order (no deadlock), released together. */
export class Locks {
  private readonly held = new Map<string, Promise<void>>();

  async take(names: readonly string[]): Promise<() => void> {
    const sorted = [...new Set(names)].sort();
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    for (;;) {
      const busy = sorted.map((n) => this.held.get(n)).filter((p): p is Promise<void> => p !== undefined);
      if (busy.length === 0) break;
      await Promise.all(busy);
    }
    for (const n of sorted) this.held.set(n, mine);
    return () => {
      for (const n of sorted) if (this.held.get(n) === mine) this.held.delete(n);
      release();
    };
  }

  /**
   * One of `names`, the first that is free (in their order), waiting only while all are held: what a step
   * that may act on any of several things takes (a rolling restart restarts its instances in any order).
   */
  async takeAny(names: readonly string[]): Promise<{ name: string; release: () => void }> {
    if (names.length === 0) throw new Error("takeAny of nothing");
    for (;;) {
      const free = names.find((n) => !this.held.has(n));
      if (free !== undefined) return { name: free, release: await this.take([free]) };
      await Promise.race(names.map((n) => this.held.get(n)));
    }
  }
}
