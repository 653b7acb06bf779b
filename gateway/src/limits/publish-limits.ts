import { BoundedTable } from "./bounded-table.js";
import { TokenBucket } from "./token-bucket.js";

/** Who an HTTP publish counts against: an API key, else a named user, else the client's address. */
export type Publisher = Readonly<{ kind: "key" | "user" | "ip"; id: string }>;

export type PublishLimitOptions = {
  /** Messages per second per user, or per address when nobody is named (PUBLISH_RATE); -1 unlimited. */
  rate: number;
  /** Bucket size (PUBLISH_BURST), for users, addresses and keys alike. */
  burst: number;
  /** Messages per second per API key (PUBLISH_RATE_PER_KEY); -1 unlimited. */
  ratePerKey: number;
  /** Hard bound on the publishers tracked; when full and none is idle, new ones are refused. */
  maxEntries?: number;
};

export type PublishRefusalReason = "rate" | "table_full";
export type PublishVerdict = { ok: true } | { ok: false; reason: PublishRefusalReason; retryAfterSec: number };

const OK: PublishVerdict = { ok: true };
const DEFAULT_MAX_ENTRIES = 100_000;

/**
 * HTTP publishes of one worker, counted in messages (a batch counts each item): a token bucket per
 * publisher. A request is let in while its publisher has a token; a batch larger than what is left runs the
 * bucket into debt, so the rate holds on average whatever the batch size. Pure: time is passed in. Bounded:
 * full (idle) buckets are swept when the table fills, at most once a second (BoundedTable).
 */
export class PublishLimiter {
  private readonly buckets: BoundedTable<TokenBucket>;

  constructor(
    private readonly opts: PublishLimitOptions,
    /** Told of every refusal (metrics). */
    private readonly onRefuse?: (reason: PublishRefusalReason) => void,
  ) {
    this.buckets = new BoundedTable(opts.maxEntries ?? DEFAULT_MAX_ENTRIES, (b, now) => b.isFull(now));
  }

  /** Publishers tracked (tests, metrics). */
  get size(): number {
    return this.buckets.size;
  }

  /** Takes `items` messages of `who`'s allowance, or says how long to wait. */
  take(who: Publisher, items: number, now: number): PublishVerdict {
    const rate = who.kind === "key" ? this.opts.ratePerKey : this.opts.rate;
    if (rate === -1) return OK;
    const b = this.buckets.entry(`${who.kind}:${who.id}`, now, () => new TokenBucket(rate, this.opts.burst, now));
    if (!b) return this.refuse("table_full", 1_000);
    return b.take(now, items) ? OK : this.refuse("rate", b.msUntilToken(now));
  }

  private refuse(reason: PublishRefusalReason, ms: number): PublishVerdict {
    this.onRefuse?.(reason);
    return { ok: false, reason, retryAfterSec: Math.max(1, Math.ceil(ms / 1_000)) };
  }
}

/** The HTTP answer to a refusal: 429 `rate_limited`, temporary, with Retry-After. */
export function publishRefusal(who: Publisher, v: Extract<PublishVerdict, { ok: false }>): { message: string; retryAfterSec: number } {
  const whose =
    v.reason === "table_full"
      ? "too many publishers"
      : `too many messages published ${who.kind === "ip" ? "from this address" : `by this ${who.kind === "key" ? "API key" : "user"}`}`;
  return { message: `${whose}; retry after ${v.retryAfterSec} s`, retryAfterSec: v.retryAfterSec };
}

/** A limiter per the settings, or undefined when both rates are -1 (unlimited). */
export function publishLimiterFor(c: Omit<PublishLimitOptions, "maxEntries">, onRefuse?: (reason: PublishRefusalReason) => void): PublishLimiter | undefined {
  return c.rate === -1 && c.ratePerKey === -1 ? undefined : new PublishLimiter(c, onRefuse);
}
