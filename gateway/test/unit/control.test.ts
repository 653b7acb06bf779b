// The control plane's pure parts: reading requests, the roll of answers a gathering waits for, merging the
// workers' parts, and the admin right of the authorization chain.
import { describe, expect, it } from "vitest";
import { gather, Roll } from "../../src/control/gather.js";
import type { Bus } from "../../src/broker/broker.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";
import { mergeParts, parseControlRequest, type WorkerReply } from "../../src/control/ops.js";
import { controlGate, controlRequestOf } from "../../src/control/request.js";
import { fromThisHost } from "../../src/auth/http-auth.js";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AccessControl } from "../../src/auth/access.js";
import { Authenticator } from "../../src/auth/authenticator.js";
import type { AuthSection } from "../../src/config/sections/index.js";

const w = (instance: string, worker: number, workers: number) => ({ instance, worker, workers });

describe("control — the roll of answers", () => {
  it("is settled once every instance heard from answered with all its workers", () => {
    const r = new Roll();
    expect(r.settled()).toBe(false);
    r.add(w("a", 1, 2));
    expect(r.settled()).toBe(false);
    r.add(w("a", 2, 2));
    expect(r.settled()).toBe(true);
    r.add(w("b", 1, 3));
    expect(r.settled()).toBe(false);
    r.add(w("b", 2, 3));
    r.add(w("b", 3, 3));
    expect(r.coverage()).toEqual({ instances: 2, workers: 5, complete: true });
  });

  it("drops a worker's repeated answer", () => {
    const r = new Roll();
    expect(r.add(w("a", 1, 2))).toBe(true);
    expect(r.add(w("a", 1, 2))).toBe(false);
    expect(r.coverage()).toEqual({ instances: 1, workers: 1, complete: false });
  });
});

describe("control — requests", () => {
  it("reads each operation's fields and refuses bad ones", () => {
    expect(parseControlRequest("disconnect", { user: "u", reconnect: false }, 10)).toMatchObject({ op: "disconnect", user: "u", reconnect: false });
    expect(parseControlRequest("disconnect", { user: "u" }, 10)).toHaveProperty("error");
    expect(parseControlRequest("disconnect", { user: "", reconnect: true }, 10)).toHaveProperty("error");
    expect(parseControlRequest("unsubscribe", { user: "u", channel: "a.*" }, 10)).toMatchObject({ channel: "a.*" });
    expect(parseControlRequest("unsubscribe", { user: "u", channel: "a..b" }, 10)).toHaveProperty("error");
    expect(parseControlRequest("occupancy", { channel: "a.b" }, 10)).toEqual({ op: "occupancy", channel: "a.b" });
    expect(parseControlRequest("occupancy", { channel: "a.*" }, 10)).toHaveProperty("error"); // a channel has no wildcard
    expect(parseControlRequest("occupancy", { channel: "a", pattern: "b" }, 10)).toHaveProperty("error");
    expect(parseControlRequest("broadcast", { channels: ["a", "b"], data: 1 }, 2)).toMatchObject({ channels: ["a", "b"] });
    expect(parseControlRequest("broadcast", { channels: ["a", "b", "c"], data: 1 }, 2)).toHaveProperty("error");
    expect(parseControlRequest("broadcast", { channels: ["a", "a"], data: 1 }, 2)).toHaveProperty("error");
    expect(parseControlRequest("broadcast", { channels: ["a"] }, 2)).toHaveProperty("error");
    expect(parseControlRequest("user", "nope", 2)).toHaveProperty("error");
    expect(parseControlRequest("subscribe", { user: "u", channel: "a.b", client: "c1", from: { seq: 3, epoch: "e" }, info: { n: 1 } }, 10)).toEqual({
      op: "subscribe",
      user: "u",
      channel: "a.b",
      client: "c1",
      from: { seq: 3, epoch: "e" },
      info: { n: 1 },
    });
    expect(parseControlRequest("subscribe", { user: "u", channel: "a.*" }, 10)).toHaveProperty("error"); // one channel
    expect(parseControlRequest("subscribe", { user: "u", channel: "a", from: { seq: 0, epoch: "e" } }, 10)).toHaveProperty("error");
    expect(parseControlRequest("subscribe", { user: "u", channel: "a", info: "x".repeat(1_100) }, 10)).toEqual({
      error: "info must encode to at most 1024 bytes of JSON",
    });
  });

  it("maps HTTP paths to operations", () => {
    expect(controlRequestOf("POST", "/v1/server/disconnect", "")).toEqual({ op: "disconnect", input: "body" });
    expect(controlRequestOf("GET", "/v1/server/disconnect", "")).toMatchObject({ code: "method_not_allowed" });
    expect(controlRequestOf("GET", "/v1/server/occupancy", "pattern=a.%3E&x=1")).toEqual({ op: "occupancy", input: { pattern: "a.>" } });
    expect(controlRequestOf("GET", "/v1/server/users/al%20ice", "")).toEqual({ op: "user", input: { user: "al ice" } });
    expect(controlRequestOf("POST", "/v1/server/user", "")).toMatchObject({ code: "not_found" });
  });

  it("the gate refuses browser pages (Origin) and bodies not declared JSON", () => {
    const json = { origin: "", contentType: "application/json; charset=utf-8" };
    expect(controlGate("POST", "/v1/server/disconnect", "", json)).toEqual({ op: "disconnect", input: "body" });
    expect(controlGate("POST", "/v1/server/disconnect", "", { ...json, contentType: "text/plain" })).toMatchObject({ code: "unsupported_media_type" });
    expect(controlGate("POST", "/v1/server/disconnect", "", { ...json, contentType: "" })).toMatchObject({ code: "unsupported_media_type" });
    expect(controlGate("POST", "/v1/server/disconnect", "", { ...json, origin: "https://evil.example" })).toMatchObject({ code: "forbidden" });
    expect(controlGate("GET", "/v1/server/occupancy", "channel=a", { origin: "", contentType: "" })).toMatchObject({ op: "occupancy" });
    expect(controlGate("GET", "/v1/server/occupancy", "channel=a", { origin: "null", contentType: "" })).toMatchObject({ code: "forbidden" });
  });
});

describe("control — merging the workers' parts", () => {
  it("sums occupancy by pattern across workers and instances", () => {
    const parts: WorkerReply[] = [
      { ...w("a", 1, 2), part: { op: "occupancy", subscribers: 3, patterns: { "x.a": 2, "x.*": 1 }, truncated: false } },
      { ...w("b", 1, 1), part: { op: "occupancy", subscribers: 4, patterns: { "x.a": 4 }, truncated: false } },
    ];
    expect(mergeParts({ op: "occupancy", channel: "x.a" }, parts, { instances: 2, workers: 2, complete: false })).toEqual({
      channel: "x.a",
      subscribers: 7,
      patterns: { "x.a": 6, "x.*": 1 },
      instances: 2,
      workers: 2,
      complete: false,
    });
  });

  it("adds up closed connections and names each listed connection's instance and worker", () => {
    const cov = { instances: 1, workers: 2, complete: true };
    const closed = mergeParts(
      { op: "disconnect", user: "u", reconnect: true, reason: "r" },
      [
        { ...w("a", 1, 2), part: { op: "disconnect", websocket: 2, sse: 1 } },
        { ...w("a", 2, 2), part: { op: "disconnect", websocket: 1, sse: 0 } },
      ],
      cov,
    );
    expect(closed).toMatchObject({ closed: 4, websocket: 3, sse: 1 });
    const listed = mergeParts(
      { op: "user", user: "u" },
      [{ ...w("a", 2, 2), part: { op: "user", connections: [{ transport: "sse", id: 7, ip: "", subscriptions: [] }], truncated: false } }],
      cov,
    );
    expect(listed.connections).toEqual([{ instance: "a", worker: 2, transport: "sse", id: 7, ip: "", subscriptions: [] }]);
    const subscribed = mergeParts(
      { op: "subscribe", user: "u", channel: "a" },
      [
        { ...w("a", 1, 2), part: { op: "subscribe", websocket: 0, refused: 1, refusal: { code: "feature_disabled", message: "m" } } },
        { ...w("a", 2, 2), part: { op: "subscribe", websocket: 2, refused: 0 } },
      ],
      cov,
    );
    expect(subscribed).toMatchObject({ user: "u", channel: "a", subscribed: 2, refused: 1, refusal: { code: "feature_disabled" } });
  });
});

describe("control — the admin right", () => {
  const auth = (over: Partial<AuthSection>) =>
    new Authenticator({
      jwtSecret: "",
      jwtPublicKeyFile: "",
      jwtJwksFile: "",
      jwtAlgorithms: [],
      jwtIssuer: "",
      jwtAudience: "",
      jwtClockToleranceSec: 5,
      apiKeys: [],
      apiKeysFile: "",
      ...over,
    });
  const knock = (apiKey?: string) => ({ transport: "http" as const, ip: "", headers: {}, ...(apiKey ? { apiKey } : {}) });

  it("is an API key's; a valid token's is refused", async () => {
    const access = new AccessControl(auth({ jwtSecret: "s".repeat(40), apiKeys: ["k".repeat(20)] }));
    const key = await access.identify(knock("k".repeat(20)));
    await expect(access.authorize(key, { right: "admin", local: false })).resolves.toBeUndefined();
    const user = { ...key, trusted: false, principal: { user: "alice", perms: { sub: [">"], pub: [">"] } } };
    await expect(access.authorize(user, { right: "admin", local: true })).rejects.toMatchObject({ code: "forbidden" });
  });

  it("is an admin-scoped key's: a publish or read key gets only its own doors", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "fgw-keys-")), "keys");
    writeFileSync(file, "# backends\npublisher-key-0123456789 publish\nreader-key-0123456789 read # the page\nops-key-0123456789 admin\n");
    const access = new AccessControl(auth({ jwtSecret: "s".repeat(40), apiKeys: ["k".repeat(20)], apiKeysFile: file }));
    const code = async (key: string, a: Parameters<AccessControl["authorize"]>[1]) =>
      access.authorize(await access.identify(knock(key)), a).then(
        () => "ok",
        (e: { code?: string }) => e.code ?? "?",
      );
    const admin = { right: "admin", local: true } as const;
    const pub = { right: "pub", channel: "a.b" } as const;
    const sub = { right: "sub", channel: "a.>" } as const;
    expect([await code("publisher-key-0123456789", admin), await code("publisher-key-0123456789", pub), await code("publisher-key-0123456789", sub)]).toEqual([
      "forbidden",
      "ok",
      "forbidden",
    ]);
    expect([await code("reader-key-0123456789", admin), await code("reader-key-0123456789", pub), await code("reader-key-0123456789", sub)]).toEqual([
      "forbidden",
      "forbidden",
      "ok",
    ]);
    // admin holds every scope; so does each key of API_KEYS
    for (const k of ["ops-key-0123456789", "k".repeat(20)]) expect([await code(k, admin), await code(k, pub), await code(k, sub)]).toEqual(["ok", "ok", "ok"]);
  });

  it("API_KEYS_FILE — a line that is not `<key> <scopes>` is refused at start, naming the file and line", () => {
    const file = join(mkdtempSync(join(tmpdir(), "fgw-keys-")), "keys");
    for (const [text, why] of [
      ["good-key-0123456789 publish\nshort publish\n", /line 2: a key must be at least 16/],
      ["good-key-0123456789 write\n", /line 1: unknown scope "write"/],
      ["good-key-0123456789\n", /line 1: write "<key> <scope>/],
      ["good-key-0123456789 read\ngood-key-0123456789 admin\n", /line 2: the key is given twice/],
    ] as const) {
      writeFileSync(file, text);
      expect(() => auth({ jwtSecret: "s".repeat(40), apiKeysFile: file })).toThrow(why);
    }
  });

  it("with authentication off is a request's from this host only (loopback, not through a proxy)", async () => {
    const access = new AccessControl(auth({}));
    const anon = await access.identify(knock());
    await expect(access.authorize(anon, { right: "admin", local: true })).resolves.toBeUndefined();
    await expect(access.authorize(anon, { right: "admin", local: false })).rejects.toMatchObject({ code: "forbidden" });
    const none = () => "";
    expect(
      ["127.0.0.1", "127.1.2.3", "::1", "::ffff:127.0.0.1", "0000:0000:0000:0000:0000:0000:0000:0001", "0000:0000:0000:0000:0000:ffff:7f00:0001"].map((ip) =>
        fromThisHost(ip, none),
      ),
    ).toEqual([true, true, true, true, true, true]);
    expect(["192.0.2.2", "10.0.0.1", "::ffff:10.0.0.1", "fd00::2", ""].map((ip) => fromThisHost(ip, none))).toEqual([false, false, false, false, false]);
    expect(fromThisHost("127.0.0.1", (h) => (h === "x-forwarded-for" ? "203.0.113.9" : ""))).toBe(false);
  });
});

describe("control — settings", () => {
  it("the subject prefix defaults to <SUBJECT_PREFIX>ctl and must not overlap the stream's or the live subjects", () => {
    expect(sectionsOf(loadConfig([], {}).config).control).toEqual({ subjectPrefix: "evctl", timeoutMs: 2_000, settleMs: 20 });
    expect(sectionsOf(loadConfig([], { SUBJECT_PREFIX: "x", CONTROL_TIMEOUT: "500ms" }).config).control).toMatchObject({
      subjectPrefix: "xctl",
      timeoutMs: 500,
    });
    expect(() => loadConfig([], { CONTROL_SUBJECT_PREFIX: "ev.ctl" })).toThrow(/CONTROL_SUBJECT_PREFIX/);
    expect(() => loadConfig([], { CONTROL_SUBJECT_PREFIX: "evlive" })).toThrow(/CONTROL_SUBJECT_PREFIX/);
  });
});

/** A bus whose subscribers answer after the given delays (ms), each as `answer(i)`; undefined: never. */
function fakeBus(delays: (number | undefined)[], answer: (i: number) => unknown): Bus {
  return {
    serve: () => undefined,
    request: () => Promise.reject(new Error("not used")),
    scatter(_subject, _body, onReply) {
      const timers = delays.map((d, i) => (d === undefined ? undefined : setTimeout(() => onReply(Buffer.from(JSON.stringify(answer(i)))), d)));
      return { stop: () => timers.forEach((t) => clearTimeout(t)) };
    },
  };
}
const decodeAnswerer = (b: Uint8Array) => JSON.parse(Buffer.from(b).toString()) as { instance: string; worker: number; workers: number };

describe("control — gathering", () => {
  it("answers soon after every worker of every instance answered, with complete:true", async () => {
    const bus = fakeBus([1, 2, 3], (i) => w(i < 2 ? "a" : "b", i + 1, i < 2 ? 2 : 1));
    const t = performance.now();
    const r = await gather(bus, "s", new Uint8Array(), decodeAnswerer, { timeoutMs: 2_000, settleMs: 10 });
    expect(performance.now() - t).toBeLessThan(500);
    expect(r.coverage).toEqual({ instances: 2, workers: 3, complete: true });
  });

  it("waits for a missing worker of an instance it heard from until the timeout, then says complete:false", async () => {
    const bus = fakeBus([1, undefined], (i) => w("a", i + 1, 2));
    const t = performance.now();
    const r = await gather(bus, "s", new Uint8Array(), decodeAnswerer, { timeoutMs: 150, settleMs: 5 });
    expect(performance.now() - t).toBeGreaterThanOrEqual(140);
    expect(r.coverage).toEqual({ instances: 1, workers: 1, complete: false });
  });

  it("takes an instance that answers within the settle time after the others were whole; ignores replies that are no answer", async () => {
    const bus = fakeBus([1, 20, 25], (i) => (i === 2 ? { nonsense: true } : w(i === 0 ? "a" : "b", 1, 1)));
    const r = await gather(
      bus,
      "s",
      new Uint8Array(),
      (b) => {
        const v = decodeAnswerer(b);
        return typeof v.instance === "string" ? v : undefined;
      },
      { timeoutMs: 2_000, settleMs: 60 },
    );
    expect(r.coverage).toEqual({ instances: 2, workers: 2, complete: true });
    expect(r.replies).toHaveLength(2);
  });
});
