// Every door that reads or writes a channel passes the same authorization chain (auth/access.ts): the
// WebSocket `sub`, `presence` and `pub`, SSE, history (and last values), the presence list and HTTP publish.
// Two real gateways against one real hook backend: one with JWT authentication, one with authentication off
// where the connect hook identifies users from a cookie.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { SseReader } from "#testkit/sse-client.js";
import { HookBackend } from "#testkit/hook-backend.js";
import { waitFor } from "#testkit/wait.js";
import { AUDIENCE, connect, ISSUER, refusal, SECRET, sign } from "#testkit/auth.js";

const API_KEY = "doors-api-key-0123456789";
let nats: NatsServerHandle;
let backend: HookBackend;
let elsewhere: HookBackend;
let gwAuth: GatewayHandle;
let gwCookie: GatewayHandle;
const clients = new ClientPool();
const uniq = uniqueNames();

beforeAll(async () => {
  backend = await HookBackend.start();
  elsewhere = await HookBackend.start();
  nats = await startNatsServer();
  const hooks = {
    CONNECT_HOOK_URL: backend.url("/connect"),
    SUBSCRIBE_HOOK_URL: backend.url("/subscribe"),
    HOOK_TIMEOUT: "3s",
    HOOK_CACHE_TTL: "1m",
    HOOK_HEADERS: "cookie,x-plan",
  };
  [gwAuth, gwCookie] = await Promise.all([
    startGateway({
      natsUrl: nats.url,
      workers: 1,
      env: { ...hooks, JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: API_KEY },
    }),
    startGateway({ natsUrl: nats.url, workers: 1, env: { ...hooks, CONNECT_HOOK_URL: backend.url("/connect-cookie"), SUBSCRIBE_HOOK_PATTERNS: "allow" } }),
  ]);
});
afterAll(async () => {
  clients.closeAll();
  await Promise.all([gwAuth?.stop(), gwCookie?.stop()]);
  await nats?.stop();
  await Promise.all([backend?.stop(), elsewhere?.stop()]);
});

const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

/** What every HTTP door answers one request with: SSE, history, last values, presence list, publish. */
async function httpDoors(gw: GatewayHandle, channel: string, headers: Record<string, string>): Promise<Record<string, number>> {
  const c = encodeURIComponent(channel);
  const get = async (path: string) => (await fetch(`${gw.url}${path}`, { headers })).status;
  const sse = await SseReader.open(`${gw.url}/v1/channels/${c}/events`, headers);
  sse.close();
  return {
    sse: sse.status,
    history: await get(`/v1/channels/${c}/messages`),
    lastValues: await get(`/v1/channels/${c}/messages?last_per_subject=1`),
    presence: await get(`/v1/channels/${c}/presence`),
    publish: (await httpPublish(gw.url, channel, { n: 1 }, headers)).status,
  };
}

describe("authorization chain — every door, authentication on", () => {
  it("a user the connect hook denies gets 403 at every door, not only the WebSocket upgrade", async () => {
    const denied = uniq("denied");
    const allowed = uniq("allowed");
    backend.answer = (c) => (c.path === "/connect" && c.body.user === denied ? { body: { allow: false, reason: "suspended" } } : { body: { allow: true } });
    const perms = { channels: { sub: ["d.>"], pub: ["d.>"] } };
    const [td, ta] = [await sign(perms, { sub: denied }), await sign(perms, { sub: allowed })];
    expect((await refusal(gwAuth.wsUrl, { headers: bearer(td) })).status).toBe(403);
    expect(await httpDoors(gwAuth, `d.${denied}`, bearer(td))).toEqual({ sse: 403, history: 403, lastValues: 403, presence: 403, publish: 403 });
    // the same doors with a user the hook allows: the refusals above are the hook's, not the routes'
    expect(await httpDoors(gwAuth, `d.${allowed}`, bearer(ta))).toEqual({ sse: 200, history: 200, lastValues: 200, presence: 200, publish: 201 });
    // each HTTP request asked the connect hook, saying which door it came by
    const transports = backend.callsTo("/connect", (b) => b.user === denied).map((c) => c.body.transport);
    expect(new Set(transports)).toEqual(new Set(["websocket", "sse", "http"]));
  });

  it("a channel the subscribe hook denies is unreadable at every read door; writes need the publish right only", async () => {
    const user = uniq("reader");
    backend.answer = (c) =>
      c.path === "/subscribe" && String(c.body.channel).startsWith("s.secret") ? { body: { allow: false, reason: "not yours" } } : { body: { allow: true } };
    const t = await sign({ channels: { sub: ["s.>"], pub: ["s.>"] } }, { sub: user });
    expect(await httpDoors(gwAuth, "s.secret", bearer(t))).toEqual({ sse: 403, history: 403, lastValues: 403, presence: 403, publish: 201 });
    expect(await httpDoors(gwAuth, "s.open", bearer(t))).toEqual({ sse: 200, history: 200, lastValues: 200, presence: 200, publish: 201 });
    const ws = clients.track(await connect(gwAuth.wsUrl, { headers: bearer(t) }));
    for (const frame of [
      { op: "sub", channel: "s.secret" },
      { op: "sub", channel: "s.secret", from: "all" },
      { op: "sub", channel: "s.secret.>", from: "last_per_subject" },
      { op: "presence", channel: "s.secret" },
    ])
      expect(await ws.request(frame)).toMatchObject({ op: "err", code: "forbidden", message: expect.stringContaining("not yours") });
    expect(await ws.request({ op: "presence", channel: "s.open" })).toMatchObject({ op: "presence", channel: "s.open" });
    // a trusted backend's API key is not a user: the hooks are not asked for it
    const before = backend.calls.length;
    expect((await fetch(`${gwAuth.url}/v1/channels/s.secret/messages`, { headers: { "x-api-key": API_KEY } })).status).toBe(200);
    expect(backend.calls.length).toBe(before);
  });

  it("subscribe answers are cached per everything the hook is sent: the connect info of another connection of the same user gets its own answer", async () => {
    const user = uniq("plans");
    backend.answer = (c) => {
      if (c.path === "/connect") return { body: { allow: true, info: { plan: (c.body.headers as Record<string, string>)["x-plan"] ?? "free" } } };
      return { body: { allow: (c.body.info as { plan?: string })?.plan === "pro", reason: "pro plan only" } };
    };
    const t = await sign({ channels: { sub: ["p.>"] } }, { sub: user });
    const pro = clients.track(await connect(gwAuth.wsUrl, { headers: { ...bearer(t), "x-plan": "pro" } }));
    const free = clients.track(await connect(gwAuth.wsUrl, { headers: bearer(t) }));
    expect(await pro.request({ op: "sub", channel: "p.room" })).toMatchObject({ op: "ok" });
    expect(await free.request({ op: "sub", channel: "p.room" })).toMatchObject({ op: "err", code: "forbidden" });
    // and the cache still works for identical requests: one more pro connection asks nothing new
    const asked = backend.callsTo("/subscribe", (b) => b.user === user).length;
    const pro2 = clients.track(await connect(gwAuth.wsUrl, { headers: { ...bearer(t), "x-plan": "pro" } }));
    expect(await pro2.request({ op: "sub", channel: "p.room" })).toMatchObject({ op: "ok" });
    expect(backend.callsTo("/subscribe", (b) => b.user === user)).toHaveLength(asked);
  });

  it("a pattern is refused unless the subscribe hook allows patterns: a hook written for channels does not hand out the channel it denies", async () => {
    const room = uniq("w");
    const secret = `${room}.secret`;
    // a hook that guards one channel: it denies room.secret and allows anything else, room.* included
    backend.answer = (c) =>
      c.path === "/subscribe" && c.body.channel === secret ? { body: { allow: false, reason: "not yours" } } : { body: { allow: true } };
    await httpPublish(gwAuth.url, secret, { secret: 1 }, { "x-api-key": API_KEY });
    const t = await sign({ channels: { sub: [`${room}.>`] } }, { sub: uniq("bob") });
    const bob = clients.track(await connect(gwAuth.wsUrl, { headers: bearer(t) }));
    const refusedPattern = { op: "err", code: "forbidden", message: expect.stringContaining('"pattern": true') };
    for (const pattern of [`${room}.*`, `${room}.>`]) {
      expect(await bob.request({ op: "sub", channel: pattern, from: "all" })).toMatchObject(refusedPattern);
      expect(await bob.request({ op: "sub", channel: pattern, from: "last_per_subject" })).toMatchObject(refusedPattern);
      expect(await bob.request({ op: "sub", channel: pattern })).toMatchObject(refusedPattern);
      const enc = encodeURIComponent(pattern);
      const sse = await SseReader.open(`${gwAuth.url}/v1/channels/${enc}/events?from=all`, bearer(t));
      sse.close();
      expect(sse.status).toBe(403);
      const last = await fetch(`${gwAuth.url}/v1/channels/${enc}/messages?last_per_subject=1`, { headers: bearer(t) });
      expect(last.status).toBe(403);
      expect(await last.json()).toMatchObject({ error: "forbidden", message: expect.stringContaining("is a pattern") });
    }
    expect(bob.msgs).toEqual([]);
    // the hook was told each time that it was asked about a pattern, and about a channel when it was one
    expect(backend.callsTo("/subscribe", (b) => b.channel === `${room}.*`).every((c) => c.body.pattern === true)).toBe(true);
    expect(await bob.request({ op: "sub", channel: secret })).toMatchObject({ op: "err", code: "forbidden", message: expect.stringContaining("not yours") });
    expect(backend.callsTo("/subscribe", (b) => b.channel === secret)[0]?.body.pattern).toBe(false);

    // a hook that allows the pattern explicitly lets it through at every door
    backend.answer = (c) => (c.path === "/subscribe" ? { body: c.body.pattern ? { allow: true, pattern: true } : { allow: true } } : { body: { allow: true } });
    const t2 = await sign({ channels: { sub: [`${room}.>`] } }, { sub: uniq("carol") });
    const carol = clients.track(await connect(gwAuth.wsUrl, { headers: bearer(t2) }));
    expect(await carol.request({ op: "sub", channel: `${room}.*`, from: "all" })).toMatchObject({ op: "ok" });
    expect((await carol.waitForMsgs(1)).map((m) => m.channel)).toEqual([secret]);
    const sse = await SseReader.open(`${gwAuth.url}/v1/channels/${encodeURIComponent(`${room}.*`)}/events`, bearer(t2));
    sse.close();
    expect(sse.status).toBe(200);
    expect((await fetch(`${gwAuth.url}/v1/channels/${encodeURIComponent(`${room}.>`)}/messages?last_per_subject=1`, { headers: bearer(t2) })).status).toBe(200);
  });

  it("refresh race: a sub waiting on the subscribe hook is refused when a refresh drops its right meanwhile", async () => {
    const user = uniq("race");
    let release = (): void => undefined;
    const hold = new Promise<void>((r) => (release = r));
    // the subscribe hook answers (allow) only after the refresh has been applied
    backend.answer = (c) => (c.path === "/subscribe" ? { body: { allow: true }, hold } : { body: { allow: true } });
    const t = await sign({ channels: { sub: ["r.>"] } }, { sub: user });
    const ws = clients.track(await connect(gwAuth.wsUrl, { headers: bearer(t) }));
    const sub = ws.request({ op: "sub", channel: "r.slow" });
    await waitFor(() => backend.callsTo("/subscribe", (b) => b.user === user && b.channel === "r.slow").length > 0 || undefined, { what: "hook call" });
    const t2 = await sign({ channels: { sub: ["other.>"] } }, { sub: user, exp: "20m" });
    expect(await ws.request({ op: "refresh", token: t2 })).toMatchObject({ op: "ok" });
    release();
    expect(await sub).toMatchObject({ op: "err", code: "forbidden" });
    await httpPublish(gwAuth.url, "r.slow", { n: 1 }, { "x-api-key": API_KEY });
    expect(await ws.request({ op: "ping" })).toMatchObject({ op: "pong" });
    expect(ws.msgs).toEqual([]);
  });

  it("hook calls do not follow redirects: a 307 elsewhere fails closed and the other host hears nothing", async () => {
    const user = uniq("redirect");
    backend.answer = (c) =>
      c.path === "/subscribe" && c.body.user === user ? { status: 307, headers: { location: elsewhere.url("/steal") } } : { body: { allow: true } };
    elsewhere.answer = () => ({ body: { allow: true } });
    const t = await sign({ channels: { sub: ["x.>"] } }, { sub: user });
    const ws = clients.track(await connect(gwAuth.wsUrl, { headers: { ...bearer(t), cookie: "session=secret" } }));
    expect(await ws.request({ op: "sub", channel: "x.y" })).toMatchObject({ op: "err", code: "hook_unavailable", temporary: true });
    expect(elsewhere.calls).toEqual([]);
  });

  it("an API key is refused in SSE's ?token= (URLs are logged), accepted in X-Api-Key", async () => {
    const inUrl = await SseReader.open(`${gwAuth.url}/v1/channels/k.x/events?token=${API_KEY}`);
    expect(inUrl.status).toBe(401);
    expect(inUrl.json).toMatchObject({ error: "unauthorized", message: expect.stringContaining("X-Api-Key") });
    const inHeader = await SseReader.open(`${gwAuth.url}/v1/channels/k.x/events`, { "x-api-key": API_KEY });
    inHeader.close();
    expect(inHeader.status).toBe(200);
  });
});

describe("authorization chain — authentication off, users named by the connect hook from a cookie", () => {
  it("HTTP doors ask the connect hook too: no session cookie, no access anywhere", async () => {
    backend.answer = (c) => {
      if (c.path === "/connect-cookie") {
        const cookie = (c.body.headers as Record<string, string>).cookie ?? "";
        const sid = /sid=(\w+)/.exec(cookie)?.[1];
        return { body: sid ? { allow: true, info: { sid } } : { allow: false, reason: "log in first" } };
      }
      return { body: { allow: true } };
    };
    expect(await httpDoors(gwCookie, "c.room", {})).toEqual({ sse: 403, history: 403, lastValues: 403, presence: 403, publish: 403 });
    expect(await httpDoors(gwCookie, "c.room", { cookie: "sid=alice" })).toEqual({ sse: 200, history: 200, lastValues: 200, presence: 200, publish: 201 });
    expect((await refusal(gwCookie.wsUrl)).status).toBe(403);
  });

  it("unidentified users never share a subscribe answer: a deny stays a deny after another client was allowed", async () => {
    // the connect hook names no user (all are `anon`); the subscribe hook decides by the session in `info`
    backend.answer = (c) => {
      if (c.path === "/connect-cookie")
        return { body: { allow: true, info: { sid: /sid=(\w+)/.exec(String((c.body.headers as Record<string, string>).cookie))?.[1] } } };
      return { body: { allow: (c.body.info as { sid?: string })?.sid === "alice", reason: "alice's room" } };
    };
    const room = uniq("c.private");
    await httpPublish(gwCookie.url, room, { secret: 1 }, { cookie: "sid=alice" });
    const alice = clients.track(await connect(gwCookie.wsUrl, { headers: { cookie: "sid=alice" } }));
    const bob = clients.track(await connect(gwCookie.wsUrl, { headers: { cookie: "sid=bob" } }));
    expect(await alice.request({ op: "sub", channel: room, from: "all" })).toMatchObject({ op: "ok" });
    expect(await bob.request({ op: "sub", channel: room, from: "all" })).toMatchObject({ op: "err", code: "forbidden" });
    expect((await fetch(`${gwCookie.url}/v1/channels/${room}/messages`, { headers: { cookie: "sid=bob" } })).status).toBe(403);
    expect(await alice.request({ op: "sub", channel: `${room}.2` })).toMatchObject({ op: "ok" });
    // nothing was cached for them: every one of those reads asked the backend
    expect(backend.callsTo("/subscribe", (b) => String(b.channel).startsWith(room))).toHaveLength(4);
  });

  it("SUBSCRIBE_HOOK_PATTERNS=allow: a pattern needs only the hook's allow, and the hook is told it is one", async () => {
    backend.answer = (c) => (c.path === "/connect-cookie" ? { body: { allow: true, user: "dana" } } : { body: { allow: true } });
    const room = uniq("c.open");
    const ws = clients.track(await connect(gwCookie.wsUrl, { headers: { cookie: "sid=dana" } }));
    expect(await ws.request({ op: "sub", channel: `${room}.*`, from: "all" })).toMatchObject({ op: "ok" });
    expect(
      (await fetch(`${gwCookie.url}/v1/channels/${encodeURIComponent(`${room}.>`)}/messages?last_per_subject=1`, { headers: { cookie: "sid=dana" } })).status,
    ).toBe(200);
    expect(backend.callsTo("/subscribe", (b) => String(b.channel).startsWith(room)).map((c) => c.body.pattern)).toEqual([true, true]);
  });
});
