import { describe, expect, it } from "vitest";
import { FrameLimiter } from "../../src/limits/frame-rate.js";
import { BoundedTable } from "../../src/limits/bounded-table.js";
import { IpTable } from "../../src/limits/ip-table.js";
import { OriginPolicy } from "../../src/limits/origin.js";
import { TokenBucket } from "../../src/limits/token-bucket.js";
import { PublishLimiter, publishLimiterFor, publishRefusal } from "../../src/limits/publish-limits.js";
import { readUpgradeOffer } from "../../src/auth/upgrade-token.js";
import { loadConfig } from "../../src/config/config.js";
import { ConfigError } from "../../src/errors.js";

describe("limits — token bucket and frame rate", () => {
  it("a bucket allows its burst, then its rate", () => {
    const b = new TokenBucket(10, 3, 0);
    expect([b.take(0), b.take(0), b.take(0), b.take(0)]).toEqual([true, true, true, false]);
    expect(b.msUntilToken(0)).toBe(100);
    expect(b.take(99)).toBe(false);
    expect(b.take(100)).toBe(true);
    expect(b.isFull(1_000)).toBe(true);
  });

  it("frame limiter: burst ok, first breach warns, a second within the window closes, after the window warns again", () => {
    const f = new FrameLimiter(10, 5, 1_000, 0);
    for (let i = 0; i < 5; i++) expect(f.check(0)).toBe("ok");
    expect(f.check(0)).toBe("warn");
    expect(f.check(50)).toBe("close");
    const g = new FrameLimiter(10, 5, 1_000, 0);
    for (let i = 0; i < 5; i++) g.check(0);
    expect(g.check(0)).toBe("warn");
    expect(g.check(100)).toBe("ok"); // one token refilled: a client that slows down recovers
    expect(g.check(2_000)).toBe("ok");
    for (let i = 0; i < 4; i++) g.check(2_000);
    expect(g.check(2_000)).toBe("warn"); // the window has passed: a warning again, not a close
  });
});

describe("limits — items count as frames and messages", () => {
  it("a bucket lets n in while it has a token, and the debt is paid back before the next", () => {
    const b = new TokenBucket(10, 5, 0);
    expect(b.take(0, 8)).toBe(true); // 5 left: in, 3 owed
    expect(b.take(0)).toBe(false);
    expect(b.msUntilToken(0)).toBe(400); // -3 → 1 at 10/s
    expect(b.take(399)).toBe(false);
    expect(b.take(400)).toBe(true);
  });

  it("frame limiter: a batch's items are charged after its frame; the next frames are over the allowance", () => {
    const f = new FrameLimiter(10, 20, 1_000, 0);
    expect(f.check(0)).toBe("ok");
    f.charge(0, 99); // a batch of 100
    expect(f.check(0)).toBe("warn");
    expect(f.check(10)).toBe("close");
    const g = new FrameLimiter(10, 20, 1_000, 0);
    g.check(0);
    g.charge(0, 24); // 25 items: 5 owed, paid back at 10/s
    expect(g.check(500)).toBe("warn");
    expect(g.check(510)).toBe("close");
    const h = new FrameLimiter(10, 20, 1_000, 0);
    h.check(0);
    h.charge(0, 24);
    expect(h.check(600)).toBe("ok"); // paid back: -5 + 6
  });

  it("publish limiter: per user, address and key, each at its rate; -1 is unlimited; the table is bounded", () => {
    const refused: string[] = [];
    const l = new PublishLimiter({ rate: 10, burst: 10, ratePerKey: -1, maxEntries: 2 }, (r) => refused.push(r));
    const ann = { kind: "user", id: "ann" } as const;
    expect(l.take(ann, 15, 0)).toEqual({ ok: true });
    expect(l.take(ann, 1, 0)).toEqual({ ok: false, reason: "rate", retryAfterSec: 1 });
    expect(l.take({ kind: "ip", id: "ann" }, 1, 0)).toEqual({ ok: true }); // an address is not the user of the same name
    for (let i = 0; i < 100; i++) expect(l.take({ kind: "key", id: "k" }, 1_000, 0)).toEqual({ ok: true });
    expect(l.take({ kind: "user", id: "ben" }, 1, 0)).toMatchObject({ ok: false, reason: "table_full" });
    expect(l.take(ann, 1, 600)).toEqual({ ok: true }); // -5 + 6
    // idle buckets (full again) make room
    expect(l.take({ kind: "user", id: "ben" }, 1, 5_000)).toEqual({ ok: true });
    expect(refused).toEqual(["rate", "table_full"]);
    expect(publishLimiterFor({ rate: -1, burst: 1, ratePerKey: -1 })).toBeUndefined();
    expect(publishRefusal({ kind: "key", id: "k" }, { ok: false, reason: "rate", retryAfterSec: 3 }).message).toBe(
      "too many messages published by this API key; retry after 3 s",
    );
  });
});

describe("limits — per-IP table", () => {
  it("limits connections and new connections per second per IP; other IPs are independent", () => {
    const t = new IpTable({ maxPerIp: 2, ratePerSec: 1, burst: 3, maxEntries: 100 });
    expect(t.reserve("a", 0)).toBeUndefined();
    t.opened("a");
    expect(t.reserve("a", 0)).toBeUndefined();
    expect(t.reserve("a", 0)).toBe("ip_connections"); // one open + one pending
    expect(t.reserve("b", 0)).toBeUndefined();
    t.cancel("a");
    expect(t.reserve("a", 0)).toBeUndefined();
    t.cancel("a");
    expect(t.reserve("a", 0)).toBe("ip_rate"); // burst of 3 spent
    expect(t.retryAfterMs("a", 0)).toBe(1_000);
    expect(t.reserve("a", 1_000)).toBeUndefined();
  });

  it("stays bounded: idle entries are swept, and a full table refuses new IPs until they are", () => {
    const t = new IpTable({ maxPerIp: 10, ratePerSec: 10, burst: 10, maxEntries: 1_000 });
    for (let i = 0; i < 1_000; i++) expect(t.reserve(`10.0.${i >> 8}.${i & 255}`, 0)).toBeUndefined();
    for (let i = 0; i < 1_000; i++) t.cancel(`10.0.${i >> 8}.${i & 255}`);
    expect(t.size).toBe(1_000);
    expect(t.reserve("192.168.0.1", 0)).toBe("ip_table_full"); // buckets not refilled yet: nothing to forget
    expect(t.reserve("192.168.0.1", 200)).toBeUndefined(); // refilled: the sweep frees room
    expect(t.size).toBe(1);
    t.opened("192.168.0.1");
    expect(t.sweep(10_000)).toBe(0); // an IP with an open connection stays
    t.closed("192.168.0.1");
    expect(t.sweep(10_000)).toBe(1);
    expect(t.size).toBe(0);
  });
});

describe("limits — bounded table", () => {
  it("bounded table — makes entries on first use; full, it sweeps idle ones at most once per gap and refuses new keys while busy", () => {
    const busy = new Set<string>();
    const t = new BoundedTable<{ key: string }>(2, (e) => !busy.has(e.key), 1_000);
    const make = (key: string) => () => ({ key });
    const a = t.entry("a", 0, make("a"));
    expect(t.entry("a", 0, make("other"))).toBe(a); // found, not made again
    t.entry("b", 0, make("b"));
    busy.add("a").add("b");
    expect(t.entry("c", 0, make("c"))).toBeUndefined(); // full of busy entries: swept, nothing freed
    busy.delete("a");
    expect(t.entry("c", 500, make("c"))).toBeUndefined(); // idle now, but the last sweep was 500 ms ago
    expect(t.entry("c", 1_000, make("c"))).toEqual({ key: "c" }); // a second later: a swept, c made
    expect([t.size, t.get("a"), t.get("b")]).toEqual([2, undefined, { key: "b" }]);
    busy.clear();
    expect(t.sweep(1_001)).toBe(2); // an explicit sweep is never held back
  });
});

describe("limits — origin allowlist", () => {
  it("exact origins and *.domain; no Origin header passes; empty list allows all", () => {
    const p = new OriginPolicy(["https://app.example.com", "https://*.example.org", "http://localhost:3000"]);
    expect(p.allows("https://app.example.com")).toBe(true);
    expect(p.allows("HTTPS://APP.EXAMPLE.COM")).toBe(true);
    expect(p.allows("https://a.b.example.org")).toBe(true);
    expect(p.allows("https://example.org")).toBe(false);
    expect(p.allows("https://evilexample.org")).toBe(false);
    expect(p.allows("http://a.example.org")).toBe(false);
    expect(p.allows("http://localhost:3000")).toBe(true);
    expect(p.allows("http://localhost:3001")).toBe(false);
    expect(p.allows("null")).toBe(false);
    expect(p.allows("")).toBe(true);
    expect(new OriginPolicy([]).allows("https://anything")).toBe(true);
    expect(new OriginPolicy(["*"], true).allows("https://anything")).toBe(true);
  });

  it("with nothing to identify anyone and no list: this host's pages only (loopback origins, or the gateway's own)", () => {
    const p = new OriginPolicy([], true);
    for (const o of ["http://localhost:3000", "http://127.0.0.1:9000", "https://127.1.2.3", "http://[::1]:8080", ""]) expect(p.allows(o), o).toBe(true);
    for (const o of ["https://evil.example", "null", "http://localhost.evil.example", "http://127.0.0.1.evil.example"]) expect(p.allows(o), o).toBe(false);
    // The live page of a gateway reached by its name: the page's origin is the request's Host.
    expect(p.allows("http://gw.example:9001", "gw.example:9001")).toBe(true);
    expect(p.allows("http://gw.example:9001", "other.example:9001")).toBe(false);
    // A list, when given, is all that counts.
    expect(new OriginPolicy(["https://app.example.com"], true).allows("http://localhost:3000")).toBe(false);
  });
});

describe("auth — where the token comes from", () => {
  it("Authorization first, then the bearer subprotocol, then ?token=; fanout.v1 is selected", () => {
    expect(readUpgradeOffer({ authorization: "Bearer aaa", protocols: "fanout.v1, bearer.bbb", queryToken: "ccc" })).toEqual({
      token: "aaa",
      protocol: "fanout.v1",
    });
    expect(readUpgradeOffer({ authorization: "", protocols: "fanout.v1, bearer.bbb", queryToken: "ccc" })).toEqual({ token: "bbb", protocol: "fanout.v1" });
    expect(readUpgradeOffer({ authorization: "", protocols: "bearer.bbb,fanout.v1", queryToken: undefined })).toEqual({ token: "bbb", protocol: "fanout.v1" });
    expect(readUpgradeOffer({ authorization: "", protocols: "", queryToken: "ccc" })).toEqual({ token: "ccc", protocol: "" });
    expect(readUpgradeOffer({ authorization: "", protocols: "", queryToken: "" })).toEqual({ protocol: "" });
    expect(readUpgradeOffer({ authorization: "", protocols: "bearer.bbb", queryToken: "" })).toHaveProperty("error");
  });
});

describe("config — auth and limit settings", () => {
  const secret = "s".repeat(32);
  it.each([
    [{ JWT_SECRET: secret, JWT_JWKS_FILE: "/etc/hostname" }, "JWT_SECRET", /JWT_SECRET \(--jwt-secret\) with JWT_JWKS_FILE/],
    [{ JWT_SECRET: "short" }, "JWT_SECRET", /at least 32/],
    [{ API_KEYS: "k".repeat(20) }, "API_KEYS", /authentication is off/],
    [{ JWT_AUDIENCE: "x" }, "JWT_AUDIENCE", /authentication is off/],
    [{ JWT_SECRET: secret, JWT_ALGORITHMS: "RS256" }, "JWT_ALGORITHMS", /HS256/],
    [{ JWT_SECRET: secret, JWT_ALGORITHMS: "none" }, "JWT_ALGORITHMS", /none/],
    [{ JWT_SECRET: secret, API_KEYS: "short" }, "API_KEYS", /16/],
    [{ JWT_PUBLIC_KEY_FILE: "/nonexistent.pem" }, "JWT_PUBLIC_KEY_FILE", /does not exist/],
    [{ HOOK_SECRET_FILE: "/nonexistent-secret" }, "HOOK_SECRET_FILE", /does not exist/],
    [{ RPC_HOOK_URL: "ftp://backend/rpc" }, "RPC_HOOK_URL", /http/],
    [{ RPC_MAX_IN_FLIGHT: "0" }, "RPC_MAX_IN_FLIGHT", /between 1 and/],
    [{ TLS_CERT_FILE: "/etc/hostname" }, "TLS_KEY_FILE", /both/],
    [{ ALLOWED_ORIGINS: "example.com" }, "ALLOWED_ORIGINS", /scheme/],
    [{ MAX_CONNECTIONS_PER_IP: "0" }, "MAX_CONNECTIONS_PER_IP", /-1/],
    [{ FRAME_RATE_WINDOW: "10" }, "FRAME_RATE_WINDOW", /unit/],
  ])("rejects %j naming %s", (env, setting, msg) => {
    try {
      loadConfig([], env as NodeJS.ProcessEnv);
      expect.unreachable("should have thrown");
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).setting).toBe(setting);
      expect((e as Error).message).toMatch(msg);
    }
  });

  it("has sane defaults: auth off, limits on", () => {
    const { config } = loadConfig([], {});
    expect(config).toMatchObject({
      jwtSecret: "",
      apiKeys: [],
      allowedOrigins: [],
      maxConnections: 50_000,
      maxConnectionsPerIp: 1_000,
      connectRatePerIp: 50,
      frameRate: 100,
      frameBurst: 200,
      frameRateWindowMs: 10_000,
      jwtClockToleranceSec: 5,
    });
  });
});
