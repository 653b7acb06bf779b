import type { LeaseStore } from "../broker/broker.js";

/**
 * One instance's side of a lease one instance of the cluster holds at a time: the cluster leader's (its
 * holder runs the once-per-deployment services, services.ts) and the ordered webhook sender's turn
 * (events/webhook.ts). `tick()` renews it while held and takes it when it is free (released, or run out);
 * `holds()` says whether this instance may act as the holder now: its last renewal was sent less than
 * `holdMs` ago. A renewal that fails for any reason (the broker unreachable, another holder) lets `holds()`
 * run out; a renewal refused because another wrote the lease drops it at once.
 */
export class LeaderLease {
  private seq = 0;
  private renewedAt = -Infinity;

  constructor(
    private readonly store: LeaseStore,
    private readonly holder: string,
    private readonly holdMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  holds(): boolean {
    return this.seq > 0 && this.now() - this.renewedAt < this.holdMs;
  }

  /** Renews or takes the lease; resolves to whether this instance holds it. Never rejects. */
  async tick(): Promise<boolean> {
    const sent = this.now();
    try {
      let after = this.seq;
      if (after === 0) {
        const last = await this.store.read();
        if (last && last.holder !== "") return false;
        after = last?.seq ?? 0;
      }
      const seq = await this.store.write(this.holder, after);
      this.seq = seq ?? 0;
      if (seq !== undefined) this.renewedAt = sent;
    } catch {
      // Unreachable store: holds() runs out unless a later renewal gets through in time.
    }
    return this.holds();
  }

  /** Gives the lease up (another instance takes it at its next tick); nothing when not held. */
  async release(): Promise<void> {
    const seq = this.seq;
    this.seq = 0;
    if (seq > 0) await this.store.write("", seq).catch(() => undefined);
  }
}
