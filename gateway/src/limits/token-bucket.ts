/**
 * A token bucket: `burst` tokens, refilled at `ratePerSec`. Time is passed in (ms), so callers share one
 * clock reading per event and tests need no timers.
 */
export class TokenBucket {
  private tokens: number;
  private updated: number;

  constructor(
    private readonly ratePerSec: number,
    private readonly burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.updated = now;
  }

  private refill(now: number): void {
    if (now > this.updated) {
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.updated) * this.ratePerSec) / 1000);
      this.updated = now;
    }
  }

  /**
   * Takes `n` tokens if there is one: more than are left (a batch of items) runs the bucket into debt, and
   * what follows waits until it is repaid. The rate holds on average whatever the batch size.
   */
  take(now: number, n = 1): boolean {
    this.refill(now);
    if (this.tokens < 1) return false;
    this.tokens -= n;
    return true;
  }

  /** Takes `n` tokens whatever is left (a frame already let in turned out to carry `n` more items). */
  owe(now: number, n: number): void {
    this.refill(now);
    this.tokens -= n;
  }

  /** Full again: forgetting this bucket would change nothing. */
  isFull(now: number): boolean {
    this.refill(now);
    return this.tokens >= this.burst;
  }

  /** Milliseconds until the next token. */
  msUntilToken(now: number): number {
    this.refill(now);
    return this.tokens >= 1 ? 0 : Math.ceil(((1 - this.tokens) * 1000) / this.ratePerSec);
  }
}
