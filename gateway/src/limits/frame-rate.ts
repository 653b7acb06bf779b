import { TokenBucket } from "./token-bucket.js";

/** What to do with one inbound frame: handle it, drop it with a `rate_limited` error, or close with 4029. */
export type FrameVerdict = "ok" | "warn" | "close";

/**
 * Inbound frames of one connection: a token bucket (FRAME_RATE per second, FRAME_BURST deep). The first
 * frame over the allowance is dropped and answered with `rate_limited`; a further one within `windowMs`
 * of that warning closes the connection (4029). Frames over the limit after a warning are never handled. A
 * batch publish counts each of its items as a frame (`charge`).
 */
export class FrameLimiter {
  private readonly bucket: TokenBucket;
  private warnedAt = -Infinity;

  constructor(
    ratePerSec: number,
    burst: number,
    private readonly windowMs: number,
    now: number,
  ) {
    this.bucket = new TokenBucket(ratePerSec, burst, now);
  }

  /** A frame let in carries `n` more items (a batch publish): they count as frames, the next frames wait for them. */
  charge(now: number, n: number): void {
    if (n > 0) this.bucket.owe(now, n);
  }

  check(now: number): FrameVerdict {
    if (this.bucket.take(now)) return "ok";
    if (now - this.warnedAt < this.windowMs) return "close";
    this.warnedAt = now;
    return "warn";
  }
}

/** A limiter per the settings, or undefined when FRAME_RATE is -1 (unlimited). */
export function frameLimiterFor(c: { frameRate: number; frameBurst: number; frameRateWindowMs: number }, now: number): FrameLimiter | undefined {
  return c.frameRate === -1 ? undefined : new FrameLimiter(c.frameRate, c.frameBurst, c.frameRateWindowMs, now);
}
