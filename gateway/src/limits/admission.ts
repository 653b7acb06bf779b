import type { LimitsSection } from "../config/sections/index.js";
import { IpTable, type IpRefusal } from "./ip-table.js";
import type { GuardMetrics } from "./metrics.js";
import { OriginPolicy } from "./origin.js";

/** Most client IPs one worker tracks at once (idle ones are forgotten first). */
export const MAX_IP_ENTRIES = 100_000;
const SWEEP_INTERVAL_MS = 10_000;

/** Why an upgrade is refused before authentication, with the HTTP status it gets. */
export type Refusal = { reason: "origin" | "max_connections" | IpRefusal; status: 403 | 429 | 503; message: string; retryAfterSec?: number };

/**
 * Which connections a worker lets in: origin allowlist, connections per worker, connections and new
 * connections per second per IP. A connection is reserved at upgrade, opened or cancelled, then closed.
 */
export class Admission {
  private readonly ips: IpTable;
  private readonly origins: OriginPolicy;
  private count = 0;
  /** Told the count after each change (the worker's listen gate). */
  private watcher: ((count: number) => void) | undefined;
  private sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: LimitsSection,
    private readonly metrics: GuardMetrics,
    /** Nothing identifies anyone (authentication off, no connect hook): with no ALLOWED_ORIGINS, only this host's pages. */
    thisHostsPages = false,
  ) {
    this.ips = new IpTable({
      maxPerIp: config.maxConnectionsPerIp,
      ratePerSec: config.connectRatePerIp,
      burst: config.connectBurstPerIp,
      maxEntries: MAX_IP_ENTRIES,
    });
    this.origins = new OriginPolicy(config.allowedOrigins, thisHostsPages);
  }

  /** Client IPs tracked now (metrics). */
  get ipEntries(): number {
    return this.ips.size;
  }

  start(): void {
    this.sweeper ??= setInterval(() => {
      this.ips.sweep(Date.now());
      this.metrics.ipEntries.set(this.ips.size);
    }, SWEEP_INTERVAL_MS).unref();
  }

  stop(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Connections reserved or open now. */
  get connections(): number {
    return this.count;
  }

  /** `fn` is told the count of connections reserved or open after each change (one watcher). */
  watch(fn: (count: number) => void): void {
    this.watcher = fn;
  }

  /** Whether a browser page of `origin` may use this gateway (ALLOWED_ORIGINS; "" is no browser); `host`: the request's Host. */
  allowsOrigin(origin: string, host = ""): boolean {
    return this.origins.allows(origin, host);
  }

  /** Reserves a connection for `ip`, or returns why not. */
  reserve(ip: string, page: { origin: string; host: string }, now = Date.now()): Refusal | undefined {
    const refusal = this.check(ip, page, now);
    if (refusal) this.metrics.rejected(refusal.reason);
    else this.watcher?.(++this.count);
    return refusal;
  }

  private check(ip: string, { origin, host }: { origin: string; host: string }, now: number): Refusal | undefined {
    if (!this.origins.allows(origin, host))
      return { reason: "origin", status: 403, message: `origin ${origin.slice(0, 200)} is not allowed (ALLOWED_ORIGINS)` };
    if (this.count >= this.config.maxConnections)
      return { reason: "max_connections", status: 503, message: "this server is at its connection limit; retry elsewhere or later", retryAfterSec: 1 };
    const r = this.ips.reserve(ip, now);
    if (r === undefined) return undefined;
    if (r === "ip_connections") return { reason: r, status: 429, message: `at most ${this.config.maxConnectionsPerIp} connections per client address` };
    if (r === "ip_rate")
      return {
        reason: r,
        status: 429,
        message: "too many new connections from this address; slow down",
        retryAfterSec: Math.max(1, Math.ceil(this.ips.retryAfterMs(ip, now) / 1000)),
      };
    return { reason: r, status: 503, message: "too many client addresses right now; retry later", retryAfterSec: 1 };
  }

  opened(ip: string): void {
    this.ips.opened(ip);
  }

  cancel(ip: string): void {
    this.watcher?.(--this.count);
    this.ips.cancel(ip);
  }

  closed(ip: string): void {
    this.watcher?.(--this.count);
    this.ips.closed(ip);
  }
}
