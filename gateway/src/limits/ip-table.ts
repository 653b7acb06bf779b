import { BoundedTable } from "./bounded-table.js";
import { TokenBucket } from "./token-bucket.js";

/** Why an IP may not open another connection right now. */
export type IpRefusal = "ip_connections" | "ip_rate" | "ip_table_full";

export type IpTableOptions = {
  /** Open + pending connections per IP; -1 unlimited. */
  maxPerIp: number;
  /** New connections per second per IP; -1 unlimited. */
  ratePerSec: number;
  burst: number;
  /** Hard bound on tracked IPs; when full and nothing is idle, new IPs are refused. */
  maxEntries: number;
};

type Entry = { conns: number; pending: number; bucket: TokenBucket | undefined };

/**
 * Per-IP connection counts and connection-rate buckets of one worker. Bounded: an entry with no connection
 * and a full bucket carries no information and is dropped by `sweep` (run periodically by admission, and,
 * unlike the read and publish tables, at once each time a new IP finds the table full).
 */
export class IpTable {
  private readonly entries: BoundedTable<Entry>;

  constructor(private readonly opts: IpTableOptions) {
    this.entries = new BoundedTable(opts.maxEntries, (e, now) => e.conns === 0 && e.pending === 0 && (!e.bucket || e.bucket.isFull(now)), 0);
  }

  get size(): number {
    return this.entries.size;
  }

  /** Reserves a pending connection for `ip`, or says why not. */
  reserve(ip: string, now: number): IpRefusal | undefined {
    const o = this.opts;
    const e = this.entries.entry(ip, now, () => ({
      conns: 0,
      pending: 0,
      bucket: o.ratePerSec === -1 ? undefined : new TokenBucket(o.ratePerSec, o.burst, now),
    }));
    if (!e) return "ip_table_full";
    if (o.maxPerIp !== -1 && e.conns + e.pending >= o.maxPerIp) return "ip_connections";
    if (e.bucket && !e.bucket.take(now)) return "ip_rate";
    e.pending++;
    return undefined;
  }

  /** A reserved connection opened. */
  opened(ip: string): void {
    const e = this.entries.get(ip);
    if (!e) return;
    if (e.pending > 0) e.pending--;
    e.conns++;
  }

  /** A reservation that did not become a connection (401, client gone). */
  cancel(ip: string): void {
    const e = this.entries.get(ip);
    if (e && e.pending > 0) e.pending--;
  }

  /** An open connection closed. */
  closed(ip: string): void {
    const e = this.entries.get(ip);
    if (e && e.conns > 0) e.conns--;
  }

  /** Milliseconds until `ip` may connect again by rate (for Retry-After). */
  retryAfterMs(ip: string, now: number): number {
    return this.entries.get(ip)?.bucket?.msUntilToken(now) ?? 0;
  }

  /** Drops idle entries; returns how many. */
  sweep(now: number): number {
    return this.entries.sweep(now);
  }
}
