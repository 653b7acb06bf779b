import { describe, expect, it } from "vitest";
import { checkRead, ReadLimiter, readLimiterFor, readRefusalError } from "../../src/limits/read-limits.js";

const opts = { ratePerIp: 2, burstPerIp: 3, ratePerUser: 1, burstPerUser: 2, concurrentPerIp: 2 };

describe("read limits — per IP, per user, concurrent history reads", () => {
  it("read limits — an IP gets its burst, then one read per 1/rate s; the refusal says when to retry", () => {
    const l = new ReadLimiter(opts);
    for (let i = 0; i < 3; i++) expect(l.take("1.1.1.1", undefined, 0).ok).toBe(true);
    const r = l.take("1.1.1.1", undefined, 0);
    expect(r).toEqual({ ok: false, reason: "ip_rate", retryAfterSec: 1 });
    expect(l.take("2.2.2.2", undefined, 0).ok).toBe(true); // another IP has its own bucket
    expect(l.take("1.1.1.1", undefined, 499).ok).toBe(false);
    expect(l.take("1.1.1.1", undefined, 500).ok).toBe(true);
  });

  it("read limits — a user is limited across IPs; a refused read takes no token of the IP", () => {
    const l = new ReadLimiter(opts);
    expect(l.take("1.1.1.1", "alice", 0).ok).toBe(true);
    expect(l.take("2.2.2.2", "alice", 0).ok).toBe(true);
    expect(l.take("3.3.3.3", "alice", 0)).toMatchObject({ ok: false, reason: "user_rate" });
    // 3.3.3.3 lost nothing to alice's refusal: its whole burst is left.
    for (let i = 0; i < 3; i++) expect(l.take("3.3.3.3", undefined, 0).ok).toBe(true);
    expect(l.take("3.3.3.3", "bob", 0)).toMatchObject({ ok: false, reason: "ip_rate" });
    // bob lost nothing to the IP's refusal either.
    expect(l.take("4.4.4.4", "bob", 0).ok).toBe(true);
    expect(l.take("5.5.5.5", "bob", 0).ok).toBe(true);
    expect(l.take("1.1.1.1", "alice", 1_000).ok).toBe(true);
  });

  it("read limits — held reads count against the per-IP concurrency until released (once)", () => {
    const l = new ReadLimiter({ ...opts, burstPerIp: 100, ratePerIp: 100 });
    const a = l.take("1.1.1.1", undefined, 0, true);
    const b = l.take("1.1.1.1", undefined, 0, true);
    expect(a.ok && b.ok).toBe(true);
    expect(l.take("1.1.1.1", undefined, 0, true)).toMatchObject({ ok: false, reason: "ip_concurrent", retryAfterSec: 1 });
    expect(l.take("1.1.1.1", undefined, 0).ok).toBe(true); // an SSE open holds nothing
    if (a.ok) {
      a.release();
      a.release(); // twice: released once only
    }
    expect(l.take("1.1.1.1", undefined, 0, true).ok).toBe(true);
    expect(l.take("1.1.1.1", undefined, 0, true).ok).toBe(false);
  });

  it("read limits — -1 is unlimited; all -1 makes no limiter at all", () => {
    const l = new ReadLimiter({ ratePerIp: -1, burstPerIp: 1, ratePerUser: -1, burstPerUser: 1, concurrentPerIp: -1 });
    for (let i = 0; i < 1_000; i++) expect(l.take("1.1.1.1", "u", 0, true).ok).toBe(true);
    expect(readLimiterFor({ ratePerIp: -1, burstPerIp: 1, ratePerUser: -1, burstPerUser: 1, concurrentPerIp: -1 })).toBeUndefined();
    expect(checkRead(undefined, "1.1.1.1", "u")).toBeUndefined();
  });

  it("read limits — bounded tables: idle entries are swept, busy ones make new keys wait", () => {
    const l = new ReadLimiter({ ...opts, maxEntries: 2 });
    expect(l.take("1.1.1.1", undefined, 0).ok).toBe(true);
    expect(l.take("2.2.2.2", undefined, 0, true).ok).toBe(true); // held: never idle
    expect(l.take("3.3.3.3", undefined, 0)).toMatchObject({ ok: false, reason: "table_full" });
    // Refilled (idle) after 1 s: 1.1.1.1 is swept and 3.3.3.3 gets in.
    expect(l.take("3.3.3.3", undefined, 2_000).ok).toBe(true);
    expect(l.size.ips).toBe(2);
  });

  it("read limits — the HTTP refusal is 429 rate_limited, temporary, with Retry-After seconds", () => {
    const l = new ReadLimiter({ ...opts, burstPerIp: 1, ratePerIp: 1 });
    expect(checkRead(l, "1.1.1.1", undefined)).toBeUndefined();
    const e = checkRead(l, "1.1.1.1", undefined);
    expect(e).toMatchObject({ status: 429, code: "rate_limited", temporary: true, retryAfterSec: 1 });
    expect(readRefusalError({ ok: false, reason: "user_rate", retryAfterSec: 3 }).message).toMatch(/user.*3 s/);
  });
});
