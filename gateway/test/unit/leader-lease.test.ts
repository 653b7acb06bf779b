import { describe, expect, it } from "vitest";
import { LeaderLease } from "../../src/services/leader-lease.js";
import type { LeaseRecord, LeaseStore } from "../../src/broker/broker.js";

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

describe("services — the leader lease (the cluster leader's, and the ordered webhook sender's turn)", () => {
  it("services — one holder at a time: the other takes the lease only once it is released or has run out", async () => {
    let now = 0;
    const store = new MemoryLeaseStore();
    const a = new LeaderLease(store, "a", 1_500, () => now);
    const b = new LeaderLease(store, "b", 1_500, () => now);
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

  it("services — a holder that cannot renew stops holding after holdMs, and holds again if a later renewal gets through", async () => {
    let now = 0;
    const store = new MemoryLeaseStore();
    const a = new LeaderLease(store, "a", 1_500, () => now);
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
