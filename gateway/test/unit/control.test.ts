// The control plane's pure parts: reading requests, the roll of answers a gathering waits for, merging the
// workers' parts, and the admin right of the authorization chain.
import { describe, expect, it } from "vitest";
import { gather, Roll } from "../../src/control/gather.js";
import type { Bus } from "../../src/broker/broker.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections.js";
import { mergeParts, parseControlRequest, type WorkerReply } from "../../src/control/ops.js";
import { controlRequestOf } from "../../src/control/request.js";
import { AccessControl } from "../../src/auth/access.js";
import { Authenticator } from "../../src/auth/authenticator.js";
import type { AuthSection } from "../../src/config/sections.js";

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
  });

  it("maps HTTP paths to operations", () => {
    expect(controlRequestOf("POST", "/v1/server/disconnect", "")).toEqual({ op: "disconnect", input: "body" });
    expect(controlRequestOf("GET", "/v1/server/disconnect", "")).toMatchObject({ status: 405 });
    expect(controlRequestOf("GET", "/v1/server/occupancy", "pattern=a.%3E&x=1")).toEqual({ op: "occupancy", input: { pattern: "a.>" } });
    expect(controlRequestOf("GET", "/v1/server/users/al%20ice", "")).toEqual({ op: "user", input: { user: "al ice" } });
    expect(controlRequestOf("POST", "/v1/server/user", "")).toMatchObject({ status: 404 });
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
      ...over,
    });
  const knock = (apiKey?: string) => ({ transport: "http" as const, ip: "", headers: {}, ...(apiKey ? { apiKey } : {}) });

  it("is an API key's; a valid token's is refused", async () => {
    const access = new AccessControl(auth({ jwtSecret: "s".repeat(40), apiKeys: ["k".repeat(20)] }));
    const key = await access.identify(knock("k".repeat(20)));
    await expect(access.authorize(key, { right: "admin" })).resolves.toBeUndefined();
    const user = { ...key, trusted: false, principal: { user: "alice", perms: { sub: [">"], pub: [">"] } } };
    await expect(access.authorize(user, { right: "admin" })).rejects.toMatchObject({ code: "forbidden" });
  });

  it("is everyone's with authentication off", async () => {
    const access = new AccessControl(auth({}));
    await expect(access.authorize(await access.identify(knock()), { right: "admin" })).resolves.toBeUndefined();
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
