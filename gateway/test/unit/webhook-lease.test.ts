import { describe, expect, it } from "vitest";
import { SenderLease, senderTimings } from "../../src/events/lease.js";
import type { LeaseRecord, LeaseStore } from "../../src/broker/jetstream/webhook-lease.js";

/** The lease's subject in memory: one record, written only over the expected sequence; `expire()` is its max age running out. */
class MemoryLeaseStore implements LeaseStore {
  record?: LeaseRecord;
  private seq = 0;
  failing = false;
  async read() {
    if (this.failing) throw new Error("unreachable");
    return this.record && { ...this.record };
  }
  async write(holder: string, after: number) {
    if (this.failing) throw new Error("unreachable");
    if ((this.record?.seq ?? 0) !== after) return undefined;
    this.record = { seq: ++this.seq, holder };
    return this.seq;
  }
  expire() {
    this.record = undefined;
  }
}

describe("events — the webhook sender's lease", () => {
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

  it("events — one holder at a time: the other takes the lease only once it is released or has run out", async () => {
    let now = 0;
    const store = new MemoryLeaseStore();
    const a = new SenderLease(store, "a", 1_500, () => now);
    const b = new SenderLease(store, "b", 1_500, () => now);
    expect(await a.tick()).toBe(true);
    expect(await b.tick()).toBe(false);
    now += 500;
    expect(await a.tick()).toBe(true);
    expect(await b.tick()).toBe(false);
    // a is gone (no more ticks): b waits until the record runs out.
    now += 5_000;
    expect(a.holds()).toBe(false);
    expect(await b.tick()).toBe(false);
    store.expire();
    expect(await b.tick()).toBe(true);
    // a comes back: its renewal is refused (b wrote since), and it stays out.
    expect(await a.tick()).toBe(false);
    expect(await a.tick()).toBe(false);
    // b releases: a takes it at its next tick.
    await b.release();
    expect(b.holds()).toBe(false);
    expect(await a.tick()).toBe(true);
    expect(store.record?.holder).toBe("a");
  });

  it("events — a holder that cannot renew stops holding after holdMs, and holds again if a later renewal gets through", async () => {
    let now = 0;
    const store = new MemoryLeaseStore();
    const a = new SenderLease(store, "a", 1_500, () => now);
    expect(await a.tick()).toBe(true);
    store.failing = true;
    now += 1_000;
    expect(await a.tick()).toBe(true);
    now += 600;
    expect(await a.tick()).toBe(false);
    store.failing = false;
    expect(await a.tick()).toBe(true);
  });
});
