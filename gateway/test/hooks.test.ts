import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { HookBackend } from "#testkit/hook-backend.js";
import { AUDIENCE, connect, ISSUER, refusal, SECRET, sign } from "#testkit/auth.js";

const API_KEY = "hooks-api-key-0123456789";
const TIMEOUT_MS = 1_000;

/** The application backend: a real HTTP server whose answers each test sets. */
let backend: HookBackend;

let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool();
const headers = (t: string) => ({ authorization: `Bearer ${t}`, origin: "https://app.test", "user-agent": "hooks-test/1" });
const uniq = uniqueNames();
const callsTo = (path: string, user: string) => backend.callsTo(path, (b) => b.user === user);

beforeAll(async () => {
  backend = await HookBackend.start();
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: {
      JWT_SECRET: SECRET,
      JWT_ISSUER: ISSUER,
      JWT_AUDIENCE: AUDIENCE,
      API_KEYS: API_KEY,
      CONNECT_HOOK_URL: backend.url("/connect"),
      SUBSCRIBE_HOOK_URL: backend.url("/subscribe"),
      HOOK_TIMEOUT: `${TIMEOUT_MS}ms`,
      HOOK_CACHE_TTL: "1m",
    },
  });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
  await backend?.stop();
});

describe("hooks — connect and subscribe", () => {
  it("allow: the connect hook gets user, claims, ip and the header subset; the subscribe hook gets the channel", async () => {
    backend.answer = () => ({ body: { allow: true } });
    const user = uniq("allow");
    const t = await sign({ channels: { sub: ["a.>"] } }, { sub: user });
    const c = clients.track(await connect(gw.wsUrl, { headers: headers(t) }));
    const [hc] = callsTo("/connect", user);
    expect(hc!.body).toMatchObject({
      user,
      claims: { channels: { sub: ["a.>"], pub: [], auto: [] } },
      ip: expect.stringContaining("127.0.0.1"),
      headers: { origin: "https://app.test", "user-agent": "hooks-test/1" },
    });
    expect(hc!.body.headers).not.toHaveProperty("authorization");
    expect(await c.request({ op: "sub", channel: `a.${user}` })).toMatchObject({ op: "ok" });
    expect(callsTo("/subscribe", user)[0]!.body).toMatchObject({ user, channel: `a.${user}`, durable: null, info: null });
  });

  it("deny: a connection is refused with 403 forbidden and the reason; a subscription with err forbidden", async () => {
    const user = uniq("deny");
    backend.answer = (c) => (c.path === "/connect" ? { body: { allow: false, reason: "account suspended" } } : { body: { allow: true } });
    const t = await sign({ channels: { sub: ["a.>"] } }, { sub: user });
    const r = await refusal(gw.wsUrl, { headers: headers(t) });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body)).toMatchObject({ error: "forbidden", message: expect.stringContaining("account suspended") });
    backend.answer = (c) => (c.path === "/subscribe" ? { body: { allow: false, reason: "not your room" } } : { body: { allow: true } });
    const c = clients.track(await connect(gw.wsUrl, { headers: headers(t) }));
    expect(await c.request({ op: "sub", channel: "a.room1" })).toMatchObject({
      op: "err",
      code: "forbidden",
      temporary: false,
      message: expect.stringContaining("not your room"),
    });
  });

  it("attach claims: extra sub permissions, server-side channels and info passed back to the subscribe hook", async () => {
    const user = uniq("attach");
    backend.answer = (c) =>
      c.path === "/connect"
        ? { body: { allow: true, channels: { sub: [`inbox.${user}.>`, "extra.*"], auto: [`inbox.${user}.>`] }, info: { plan: "pro" } } }
        : { body: { allow: true } };
    const t = await sign({ channels: { sub: ["a.>"] } }, { sub: user });
    const c = clients.track(await connect(gw.wsUrl, { headers: headers(t) }));
    await waitFor(() => c.frames.find((f) => f.op === "sub" && f.auto === true && f.channel === `inbox.${user}.>`), { what: "auto sub" });
    expect(await c.request({ op: "sub", channel: "extra.x" })).toMatchObject({ op: "ok" });
    expect(callsTo("/subscribe", user).at(-1)!.body).toMatchObject({ channel: "extra.x", info: { plan: "pro" } });
    expect(await c.request({ op: "sub", channel: "other.x" })).toMatchObject({ op: "err", code: "forbidden" }); // not attached
    await httpPublish(gw.url, `inbox.${user}.hi`, { n: 1 }, { "x-api-key": API_KEY });
    expect((await c.waitForMsgs(1))[0]).toMatchObject({ sub: `inbox.${user}.>`, data: { n: 1 } });
    // taking the server-side subscription over (a resume) does not ask the subscribe hook: it was granted
    expect(await c.request({ op: "sub", channel: `inbox.${user}.>`, from: { seq: 1 } })).toMatchObject({ op: "ok" });
    expect(callsTo("/subscribe", user).map((x) => x.body.channel)).toEqual(["extra.x"]); // other.x: denied by the permissions first
    // a refresh keeps what the hook granted: extra.x is not revoked
    const t2 = await sign({ channels: { sub: ["a.>"] } }, { sub: user, exp: "20m" });
    expect(await c.request({ op: "refresh", token: t2 })).toMatchObject({ op: "ok" });
    expect(c.frames.filter((f) => f.op === "err" && f.id === undefined)).toEqual([]);
    expect(await c.request({ op: "sub", channel: "extra.y" })).toMatchObject({ op: "ok" });
  });

  it("cache: repeated subscriptions of one user and channel call the subscribe hook once", async () => {
    backend.answer = () => ({ body: { allow: true } });
    const user = uniq("cache");
    const t = await sign({ channels: { sub: ["a.>"] } }, { sub: user });
    const c1 = clients.track(await connect(gw.wsUrl, { headers: headers(t) }));
    const c2 = clients.track(await connect(gw.wsUrl, { headers: headers(t) }));
    for (let i = 0; i < 3; i++) {
      expect(await c1.request({ op: "sub", channel: "a.cached" })).toMatchObject({ op: "ok" });
      expect(await c1.request({ op: "unsub", channel: "a.cached" })).toMatchObject({ op: "ok" });
    }
    expect(await c2.request({ op: "sub", channel: "a.cached" })).toMatchObject({ op: "ok" });
    expect(callsTo("/subscribe", user)).toHaveLength(1);
    expect(await c2.request({ op: "sub", channel: "a.other" })).toMatchObject({ op: "ok" });
    expect(callsTo("/subscribe", user)).toHaveLength(2);
  });

  it("timeout: an answer later than HOOK_TIMEOUT fails closed with hook_unavailable (503 at the upgrade, temporary)", async () => {
    const user = uniq("slow");
    const t = await sign({ channels: { sub: ["a.>"] } }, { sub: user });
    backend.answer = () => ({ body: { allow: true }, delayMs: TIMEOUT_MS * 5 });
    const r = await refusal(gw.wsUrl, { headers: headers(t) });
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body)).toMatchObject({ error: "hook_unavailable", message: expect.stringContaining(`within ${TIMEOUT_MS} ms`) });
    backend.answer = (c) => (c.path === "/subscribe" ? { body: { allow: true }, delayMs: TIMEOUT_MS * 5 } : { body: { allow: true } });
    const c = clients.track(await connect(gw.wsUrl, { headers: headers(t) }));
    expect(await c.request({ op: "sub", channel: "a.slow" })).toMatchObject({ op: "err", code: "hook_unavailable", temporary: true });
    backend.answer = (c) => (c.path === "/subscribe" ? { status: 500, body: { oops: true } } : { body: { allow: true } });
    expect(await c.request({ op: "sub", channel: "a.slow" })).toMatchObject({
      op: "err",
      code: "hook_unavailable",
      message: expect.stringContaining("HTTP 500"),
    });
    // failures are not cached: the backend is asked again, and its allow now counts
    backend.answer = () => ({ body: { allow: true } });
    expect(await c.request({ op: "sub", channel: "a.slow" })).toMatchObject({ op: "ok" });
  });

  it("an endless answer: cut at HOOK_MAX_ANSWER_BYTES (1MiB by default), the upgrade 503 and the sub refused, both hook_unavailable", async () => {
    const user = uniq("flood");
    const t = await sign({ channels: { sub: ["a.>"] } }, { sub: user });
    const bound = 512 * 1024 * 1024;
    const before = backend.streamEnds.length;
    backend.answer = () => ({ endless: bound });
    const r = await refusal(gw.wsUrl, { headers: headers(t) });
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body)).toMatchObject({
      error: "hook_unavailable",
      message: "the connect hook answered more than 1048576 bytes (HOOK_MAX_ANSWER_BYTES)",
    });
    backend.answer = (c) => (c.path === "/subscribe" ? { endless: bound } : { body: { allow: true } });
    const c = clients.track(await connect(gw.wsUrl, { headers: headers(t) }));
    expect(await c.request({ op: "sub", channel: "a.flood" })).toMatchObject({ op: "err", code: "hook_unavailable", temporary: false });
    const ends = await waitFor(() => (backend.streamEnds.length >= before + 2 ? backend.streamEnds.slice(before) : undefined));
    // Each backend connection closed long before its body's end: the gateway read about the cap, not the body.
    for (const end of ends) expect(end).toMatchObject({ finished: false, written: expect.any(Number) });
    expect(Math.max(...ends.map((e) => e.written))).toBeLessThan(bound / 8);
  });

  it("backend down: connections are refused with 503 hook_unavailable (fail closed)", async () => {
    await backend.stop();
    const user = uniq("down");
    const t = await sign({ channels: { sub: ["a.>"] } }, { sub: user });
    const logsBefore = gw.logs.length;
    const r = await refusal(gw.wsUrl, { headers: headers(t) });
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body)).toMatchObject({ error: "hook_unavailable", message: expect.stringContaining("unreachable") });
    // A backend that is down fails every attempt; the worker logs it at most once per 5 s, not once per
    // attempt (the timeout test above may have logged this hook's failure already in that window).
    for (let i = 0; i < 6; i++) expect((await refusal(gw.wsUrl, { headers: headers(t) })).status).toBe(503);
    const lines = gw.logs.slice(logsBefore).filter((l) => typeof l.msg === "string" && l.msg.startsWith("connect hook "));
    expect(lines.length).toBeLessThanOrEqual(1);
  });
});
