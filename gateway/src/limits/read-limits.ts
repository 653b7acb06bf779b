import { BoundedTable } from "./bounded-table.js";
import { TokenBucket } from "./token-bucket.js";

export type ReadLimitOptions = {
  /** Reads (history requests, SSE stream opens) per second per IP; -1 unlimited. */
  ratePerIp: number;
  burstPerIp: number;
  /** Reads per second per authenticated user; -1 unlimited. */
  ratePerUser: number;
  burstPerUser: number;
  /** History requests being answered at once per IP; -1 unlimited. */
  concurrentPerIp: number;
  /** Hard bound on tracked IPs and users each; when full and nothing is idle, new ones are refused. */
  maxEntries?: number;
};

/** Why a read is refused: too many per second (by IP or user), too many at once, or the table is full. */
export type ReadRefusalReason = "ip_rate" | "user_rate" | "ip_concurrent" | "table_full";

/** A read may go ahead; `release()` (once) ends a `hold`ing one. */
export type ReadGrant = { ok: true; release(): void };
export type ReadRefusal = { ok: false; reason: ReadRefusalReason; retryAfterSec: number };

type Entry = { bucket?: TokenBucket; active: number };

const DEFAULT_MAX_ENTRIES = 100_000;
const NOOP = (): void => undefined;

/**
 * Per-IP and per-user allowances of reads (HTTP history, SSE opens) of one worker, like the connection
 * limits of `IpTable`: a token bucket per IP and per authenticated user (a read takes a token of both, or of
 * neither), and a count of history answers in progress per IP. Pure: time is passed in. Bounded: entries that
 * are idle (full bucket, nothing in progress) are swept when a table fills, at most once a second (BoundedTable).
 */
export class ReadLimiter {
  private readonly ips: BoundedTable<Entry>;
  private readonly users: BoundedTable<Entry>;

  constructor(
    private readonly opts: ReadLimitOptions,
    /** Told of every refusal (metrics). */
    private readonly onRefuse?: (reason: ReadRefusalReason) => void,
  ) {
    const idle = (e: Entry, now: number) => e.active === 0 && (!e.bucket || e.bucket.isFull(now));
    this.ips = new BoundedTable(opts.maxEntries ?? DEFAULT_MAX_ENTRIES, idle);
    this.users = new BoundedTable(opts.maxEntries ?? DEFAULT_MAX_ENTRIES, idle);
  }

  /** Tracked IPs and users (tests, metrics). */
  get size(): { ips: number; users: number } {
    return { ips: this.ips.size, users: this.users.size };
  }

  /**
   * Takes one read for `ip` and `user` (undefined: anonymous, or a trusted API key: only the IP counts).
   * `hold`: the read stays in progress until `release()` and counts against the per-IP concurrency.
   */
  take(ip: string, user: string | undefined, now: number, hold = false): ReadGrant | ReadRefusal {
    const r = this.decide(ip, user, now, hold);
    if (!r.ok) this.onRefuse?.(r.reason);
    return r;
  }

  private decide(ip: string, user: string | undefined, now: number, hold: boolean): ReadGrant | ReadRefusal {
    const o = this.opts;
    const e = this.entry(this.ips, ip, o.ratePerIp, o.burstPerIp, now);
    if (!e) return refuse("table_full", 1_000);
    const u = user === undefined ? undefined : this.entry(this.users, user, o.ratePerUser, o.burstPerUser, now);
    if (user !== undefined && !u) return refuse("table_full", 1_000);
    if (hold && o.concurrentPerIp !== -1 && e.active >= o.concurrentPerIp) return refuse("ip_concurrent", 1_000);
    const ipWait = e.bucket?.msUntilToken(now) ?? 0;
    if (ipWait > 0) return refuse("ip_rate", ipWait);
    const userWait = u?.bucket?.msUntilToken(now) ?? 0;
    if (userWait > 0) return refuse("user_rate", userWait);
    e.bucket?.take(now);
    u?.bucket?.take(now);
    if (!hold) return { ok: true, release: NOOP };
    e.active++;
    let released = false;
    return {
      ok: true,
      release: () => {
        if (released) return;
        released = true;
        if (e.active > 0) e.active--;
      },
    };
  }

  /** Drops idle entries of both tables; returns how many. */
  sweep(now: number): number {
    return this.ips.sweep(now) + this.users.sweep(now);
  }

  private entry(table: BoundedTable<Entry>, key: string, rate: number, burst: number, now: number): Entry | undefined {
    return table.entry(key, now, () => ({ active: 0, bucket: rate === -1 ? undefined : new TokenBucket(rate, burst, now) }));
  }
}

const refuse = (reason: ReadRefusalReason, ms: number): ReadRefusal => ({ ok: false, reason, retryAfterSec: Math.max(1, Math.ceil(ms / 1000)) });

const REASONS: Record<ReadRefusalReason, string> = {
  ip_rate: "too many reads from this address",
  user_rate: "too many reads by this user",
  ip_concurrent: "too many history reads in progress from this address",
  table_full: "too many clients reading",
};

/** The HTTP answer to a refusal (429 `rate_limited`, Retry-After), as the SSE and history doors send it. */
export function readRefusalError(r: ReadRefusal): { status: 429; code: "rate_limited"; message: string; retryAfterSec: number; temporary: true } {
  return {
    status: 429,
    code: "rate_limited",
    message: `${REASONS[r.reason]}; retry after ${r.retryAfterSec} s`,
    retryAfterSec: r.retryAfterSec,
    temporary: true,
  };
}

/**
 * The one call of a door that reads (SSE open): the refusal to answer, or undefined to go on. No limiter
 * (every read setting -1) lets everything through.
 */
export function checkRead(limiter: ReadLimiter | undefined, ip: string, user: string | undefined): ReturnType<typeof readRefusalError> | undefined {
  const r = limiter?.take(ip, user, Date.now());
  return r && !r.ok ? readRefusalError(r) : undefined;
}

/** A limiter per the settings, or undefined when every read limit is -1 (unlimited). */
export function readLimiterFor(c: Omit<ReadLimitOptions, "maxEntries">, onRefuse?: (reason: ReadRefusalReason) => void): ReadLimiter | undefined {
  return c.ratePerIp === -1 && c.ratePerUser === -1 && c.concurrentPerIp === -1 ? undefined : new ReadLimiter(c, onRefuse);
}
