import { describe, expect, it } from "vitest";
import { senderTimings } from "../../src/events/webhook-timings.js";

describe("events — the webhook sender's timings", () => {
  it("events — timings: a dead holder's batch is put back (ack wait) before its lease runs out, so the next holder pulls it first", () => {
    for (const takeoverMs of [2_000, 5_000, 30_000, 600_000])
      for (const waitMs of [1_000, Math.floor(takeoverMs / 2)]) {
        const t = senderTimings({ takeoverMs, waitMs, concurrency: 1 });
        expect(t.ordered).toBe(true);
        expect(t.leaseMs).toBe(takeoverMs);
        // Last renewal r: pulls end by r + hold + wait, heartbeats by r + hold; the lease runs out at r + L.
        expect(t.holdMs + waitMs + t.ackWaitMs).toBeLessThanOrEqual(t.leaseMs);
        expect(t.ackWaitMs).toBeGreaterThan(t.tickMs);
        expect(t.holdMs).toBeGreaterThanOrEqual(2 * t.tickMs);
      }
    expect(senderTimings({ takeoverMs: 5_000, waitMs: 1_000, concurrency: 1 })).toEqual({
      ordered: true,
      tickMs: 500,
      holdMs: 1_500,
      ackWaitMs: 2_500,
      leaseMs: 5_000,
    });
    expect(senderTimings({ takeoverMs: 5_000, waitMs: 1_000, concurrency: 4 })).toMatchObject({ ordered: false, ackWaitMs: 5_000, tickMs: 500 });
  });
});
