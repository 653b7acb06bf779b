// The hooks in Centrifugo's proxy format (HOOK_FORMAT=centrifugo), and the refresh and sub_refresh hooks in both
// formats: a real gateway, a real nats-server, real WebSocket clients, and an application backend written here
// the way Centrifugo's proxy documentation describes one: it reads {client, transport, protocol, encoding, …}
// and answers {"result": …}, {"error": {code, message}} or {"disconnect": {code, reason}}. Its `down` switch
// resets every connection, as a backend that is not there.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { AUDIENCE, connect, ISSUER, refusal, SECRET, sign } from "#testkit/auth.js";
import type { TestClient } from "#testkit/ws-client.js";
import { Centrifuge } from "centrifuge";
import WebSocket from "ws";

type Call = { path: string; body: Record<string, unknown>; headers: IncomingHttpHeaders };
type Handler = (body: Record<string, unknown>) => unknown;

/** The application backend: one handler per proxy path, each call recorded. */
class ProxyBackend {
  readonly calls: Call[] = [];
  handlers: Record<string, Handler> = {};
  down = false;
  private server?: Server;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let raw = "";
      req.on("data", (d: Buffer) => (raw += d.toString()));
      req.on("end", () => {
        if (this.down) return void req.socket.destroy();
        const path = req.url ?? "";
        const body = JSON.parse(raw) as Record<string, unknown>;
        this.calls.push({ path, body, headers: req.headers });
        const answer = (this.handlers[path] ?? (() => ({ result: {} })))(body);
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, "127.0.0.1", r));
    this.port = (this.server.address() as { port: number }).port;
  }

  url = (path: string): string => `http://127.0.0.1:${this.port}${path}`;
  callsTo = (path: string, user?: string): Call[] => this.calls.filter((c) => c.path === path && (user === undefined || c.body.user === user));

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }
}

const backend = new ProxyBackend();
let nats: NatsServerHandle;
/** Every hook set, in Centrifugo's format. */
let gw: GatewayHandle;
/** The subscribe, refresh and sub_refresh hooks in the native format. */
let gwNative: GatewayHandle;
const clients = new ClientPool();
const uniq = uniqueNames();
const API_KEY = "centrifugo-hooks-key-0123456789";
const auth = { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, JWT_CLOCK_TOLERANCE: "0s", API_KEYS: API_KEY, HOOK_TIMEOUT: "1s" };
const nowS = () => Math.floor(Date.now() / 1000);

beforeAll(async () => {
  await backend.start();
  nats = await startNatsServer();
  [gw, gwNative] = await Promise.all([
    startGateway({
      natsUrl: nats.url,
      workers: 1,
      env: {
        ...auth,
        HOOK_FORMAT: "centrifugo",
        HOOK_CACHE_TTL: "0s",
        HOOK_HEADERS: "origin,x-app-session",
        CONNECT_HOOK_URL: backend.url("/c/connect"),
        SUBSCRIBE_HOOK_URL: backend.url("/c/subscribe"),
        PUBLISH_HOOK_URL: backend.url("/c/publish"),
        RPC_HOOK_URL: backend.url("/c/rpc"),
        REFRESH_HOOK_URL: backend.url("/c/refresh"),
        SUB_REFRESH_HOOK_URL: backend.url("/c/sub_refresh"),
      },
    }),
    startGateway({
      natsUrl: nats.url,
      workers: 1,
      env: {
        ...auth,
        HOOK_CACHE_TTL: "0s",
        SUBSCRIBE_HOOK_URL: backend.url("/n/subscribe"),
        REFRESH_HOOK_URL: backend.url("/n/refresh"),
        SUB_REFRESH_HOOK_URL: backend.url("/n/sub_refresh"),
      },
    }),
  ]);
});
afterAll(async () => {
  clients.closeAll();
  await Promise.all([gw?.stop(), gwNative?.stop()]);
  await nats?.stop();
  await backend.stop();
});

/** Every handler allows with an empty result; the backend is up. */
function allowAll(): void {
  backend.down = false;
  backend.handlers = {};
}

async function tokenOf(user: string, exp: string | number = "10m"): Promise<string> {
  return sign({ channels: { sub: ["c.>"], pub: ["c.>"] }, rpc: ["m.*"] }, { sub: user, exp });
}

async function socketOf(g: GatewayHandle, user: string, exp?: string | number): Promise<TestClient> {
  const t = await tokenOf(user, exp);
  return clients.track(await connect(g.wsUrl, { headers: { authorization: `Bearer ${t}`, origin: "https://app.test", "x-app-session": "s-1" } }));
}

describe("centrifugo format — connect", () => {
  it("allow: the request names the connection; headers come as HTTP headers; channels subscribe it; meta goes back to the other hooks", async () => {
    allowAll();
    const user = uniq("conn");
    backend.handlers["/c/connect"] = () => ({ result: { user: "ignored-with-a-token", channels: [`c:inbox.${user}`], meta: { plan: "pro" } } });
    const c = await socketOf(gw, user);
    const call = backend.callsTo("/c/connect").at(-1)!;
    expect(call.body).toEqual({ client: expect.stringMatching(/^[\w-]{16}$/), transport: "websocket", protocol: "json", encoding: "json" });
    expect(call.headers).toMatchObject({ origin: "https://app.test", "x-app-session": "s-1" });
    await waitFor(() => c.frames.find((f) => f.op === "sub" && f.auto === true && f.channel === `c.inbox.${user}`), { what: "server-side subscription" });
    expect(await c.request({ op: "sub", channel: `c.room.${user}` })).toMatchObject({ op: "ok" });
    // the token's user stays the user; the connect hook's meta comes back as meta, the client id as client
    expect(backend.callsTo("/c/subscribe", user).at(-1)!.body).toEqual({
      client: call.body.client,
      transport: "websocket",
      protocol: "json",
      encoding: "json",
      user,
      channel: `c:room.${user}`,
      meta: { plan: "pro" },
    });
  });

  it("error answer: refused with the mapped code (103 → 403 forbidden, an application's 4xx–1999 code → forbidden) and its message", async () => {
    allowAll();
    backend.handlers["/c/connect"] = () => ({ error: { code: 103, message: "account suspended" } });
    let r = await refusal(gw.wsUrl, { headers: { authorization: `Bearer ${await tokenOf(uniq("deny"))}` } });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body)).toMatchObject({ error: "forbidden", message: expect.stringContaining("account suspended") });
    backend.handlers["/c/connect"] = () => ({ error: { code: 101, message: "who are you" } });
    r = await refusal(gw.wsUrl, { headers: { authorization: `Bearer ${await tokenOf(uniq("deny"))}` } });
    expect(r.status).toBe(401);
    expect(JSON.parse(r.body)).toMatchObject({ error: "unauthorized", message: expect.stringContaining("who are you") });
  });

  it("disconnect answer: the socket opens and is closed at once with its code and reason", async () => {
    allowAll();
    backend.handlers["/c/connect"] = () => ({ disconnect: { code: 4501, reason: "banned" } });
    const c = await socketOf(gw, uniq("disc"));
    expect(await c.waitClosed()).toBe(4501);
    expect(c.closeReason).toBe("banned");
  });

  it("backend down: refused with 503 hook_unavailable, never let in", async () => {
    allowAll();
    backend.down = true;
    const r = await refusal(gw.wsUrl, { headers: { authorization: `Bearer ${await tokenOf(uniq("down"))}` } });
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body)).toMatchObject({ error: "hook_unavailable", temporary: true });
  });

  it("a native answer ({allow:false}) to a centrifugo-format hook is malformed: refused, never allowed", async () => {
    allowAll();
    backend.handlers["/c/connect"] = () => ({ allow: false });
    const r = await refusal(gw.wsUrl, { headers: { authorization: `Bearer ${await tokenOf(uniq("native"))}` } });
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body)).toMatchObject({ error: "hook_unavailable", message: expect.stringContaining("malformed") });
  });
});

describe("centrifugo format — the connection token's meta", () => {
  it("meta: the token's meta claim reaches the connect, subscribe, publish and RPC hooks as meta, with the JavaScript SDK on the Centrifuge door", async () => {
    allowAll();
    const user = uniq("meta");
    const meta = { plan: "gold", tenant: 7 };
    backend.handlers["/c/rpc"] = () => ({ result: { data: { ok: true } } });
    const t = await sign({ channels: { sub: ["c.>"], pub: ["c.>"] }, rpc: ["m.*"], meta }, { sub: user });
    const sdk = new Centrifuge(`ws://127.0.0.1:${gw.port}/connection/websocket`, { websocket: WebSocket, token: t, timeout: 10_000 });
    try {
      sdk.connect();
      await sdk.ready(10_000);
      const sub = sdk.newSubscription(`c:meta.${user}`);
      sub.subscribe();
      await sub.ready(10_000);
      await sdk.publish(`c:meta.${user}`, { n: 1 });
      await sdk.rpc("m.meta", { q: 1 });
      for (const hook of ["/c/connect", "/c/subscribe", "/c/publish", "/c/rpc"]) {
        const call = backend.calls.filter((c) => c.path === hook && (hook === "/c/connect" || c.body.user === user)).at(-1);
        expect(call?.body.meta, hook).toEqual(meta);
      }
    } finally {
      sdk.disconnect();
    }
  });
});

describe("centrifugo format — subscribe", () => {
  it("allow with data: the ok carries the result's data (b64data as its base64)", async () => {
    allowAll();
    const user = uniq("sub");
    const c = await socketOf(gw, user);
    backend.handlers["/c/subscribe"] = (b) => ({ result: b.channel === `c:b64.${user}` ? { b64data: "AAEC" } : { data: { welcome: b.channel } } });
    expect(await c.request({ op: "sub", channel: `c.a.${user}` })).toMatchObject({ op: "ok", data: { welcome: `c:a.${user}` } });
    expect(await c.request({ op: "sub", channel: `c.b64.${user}` })).toMatchObject({ op: "ok", data: "AAEC" });
  });

  it("error answer: err with the mapped code and the backend's code as appCode", async () => {
    allowAll();
    const user = uniq("subdeny");
    const c = await socketOf(gw, user);
    backend.handlers["/c/subscribe"] = () => ({ error: { code: 103, message: "not your room" } });
    expect(await c.request({ op: "sub", channel: `c.x.${user}` })).toMatchObject({
      op: "err",
      code: "forbidden",
      appCode: "103",
      temporary: false,
      message: expect.stringContaining("not your room"),
    });
    backend.handlers["/c/subscribe"] = () => ({ error: { code: 1001, message: "come back later", temporary: true } });
    expect(await c.request({ op: "sub", channel: `c.y.${user}` })).toMatchObject({ op: "err", code: "forbidden", appCode: "1001", temporary: true });
    expect(c.open).toBe(true);
  });

  it("disconnect answer: the socket is closed with its code", async () => {
    allowAll();
    const c = await socketOf(gw, uniq("subdisc"));
    backend.handlers["/c/subscribe"] = () => ({ disconnect: { code: 4000, reason: "reconnect elsewhere" } });
    c.sendRaw(JSON.stringify({ op: "sub", channel: "c.z", id: "s1" }));
    expect(await c.waitClosed()).toBe(4000);
    expect(c.closeReason).toBe("reconnect elsewhere");
  });

  it("backend down: err hook_unavailable, temporary", async () => {
    allowAll();
    const c = await socketOf(gw, uniq("subdown"));
    backend.down = true;
    expect(await c.request({ op: "sub", channel: "c.down" })).toMatchObject({ op: "err", code: "hook_unavailable", temporary: true });
  });
});

describe("centrifugo format — publish", () => {
  it("allow with data: the result's data is stored instead; the request carries the channel and data", async () => {
    allowAll();
    const user = uniq("pub");
    const c = await socketOf(gw, user);
    await c.sub(`c.p.${user}`);
    backend.handlers["/c/publish"] = (b) => ({ result: { data: { checked: b.data } } });
    expect(await c.request({ op: "pub", channel: `c.p.${user}`, data: { n: 1 } })).toMatchObject({ op: "ok" });
    expect((await c.waitForMsgs(1))[0]).toMatchObject({ data: { checked: { n: 1 } } });
    expect(backend.callsTo("/c/publish", user).at(-1)!.body).toMatchObject({
      transport: "websocket",
      encoding: "json",
      user,
      channel: `c:p.${user}`,
      data: { n: 1 },
    });
    // an empty result stores it as sent
    backend.handlers["/c/publish"] = () => ({ result: {} });
    expect(await c.request({ op: "pub", channel: `c.p.${user}`, data: { n: 2 } })).toMatchObject({ op: "ok" });
    expect((await c.waitForMsgs(2))[1]).toMatchObject({ data: { n: 2 } });
  });

  it("error answer: err with the mapped code and appCode; nothing stored", async () => {
    allowAll();
    const user = uniq("pubdeny");
    const c = await socketOf(gw, user);
    backend.handlers["/c/publish"] = () => ({ error: { code: 1002, message: "no swearing" } });
    expect(await c.request({ op: "pub", channel: `c.q.${user}`, data: 1 })).toMatchObject({
      op: "err",
      code: "forbidden",
      appCode: "1002",
      message: expect.stringContaining("no swearing"),
    });
  });

  it("disconnect answer: the socket is closed with its code", async () => {
    allowAll();
    const c = await socketOf(gw, uniq("pubdisc"));
    backend.handlers["/c/publish"] = () => ({ disconnect: { code: 4503, reason: "spam" } });
    c.sendRaw(JSON.stringify({ op: "pub", channel: "c.r", data: 1, id: "p1" }));
    expect(await c.waitClosed()).toBe(4503);
  });

  it("backend down: err hook_unavailable", async () => {
    allowAll();
    const c = await socketOf(gw, uniq("pubdown"));
    backend.down = true;
    expect(await c.request({ op: "pub", channel: "c.s", data: 1 })).toMatchObject({ op: "err", code: "hook_unavailable", temporary: true });
  });
});

describe("centrifugo format — rpc", () => {
  it("allow: the result's data is the answer; the request carries method and data", async () => {
    allowAll();
    const user = uniq("rpc");
    const c = await socketOf(gw, user);
    backend.handlers["/c/rpc"] = (b) => ({ result: { data: { echo: b.data, method: b.method } } });
    expect(await c.request({ op: "rpc", method: "m.echo", data: { x: 1 } })).toMatchObject({ op: "ok", data: { echo: { x: 1 }, method: "m.echo" } });
    expect(backend.callsTo("/c/rpc", user).at(-1)!.body).toMatchObject({ transport: "websocket", protocol: "json", encoding: "json", user });
  });

  it("error answer: rpc_error with the backend's code as appCode", async () => {
    allowAll();
    const c = await socketOf(gw, uniq("rpcerr"));
    backend.handlers["/c/rpc"] = () => ({ error: { code: 1404, message: "no such order" } });
    expect(await c.request({ op: "rpc", method: "m.get" })).toMatchObject({ op: "err", code: "rpc_error", appCode: "1404", message: "no such order" });
  });

  it("disconnect answer: the socket is closed with its code", async () => {
    allowAll();
    const c = await socketOf(gw, uniq("rpcdisc"));
    backend.handlers["/c/rpc"] = () => ({ disconnect: { code: 4502, reason: "bye" } });
    c.sendRaw(JSON.stringify({ op: "rpc", method: "m.x", id: "r1" }));
    expect(await c.waitClosed()).toBe(4502);
  });

  it("backend down: err hook_unavailable", async () => {
    allowAll();
    const c = await socketOf(gw, uniq("rpcdown"));
    backend.down = true;
    expect(await c.request({ op: "rpc", method: "m.x" })).toMatchObject({ op: "err", code: "hook_unavailable", temporary: true });
  });
});

describe("refresh hook — a connection's expiry", () => {
  it("centrifugo: the connect hook's expire_at is the expiry; refresh's expire_at extends it, expired:true closes with 4001", async () => {
    allowAll();
    const user = uniq("refresh");
    backend.handlers["/c/connect"] = () => ({ result: { expire_at: nowS() + 1 } });
    let extensions = 0;
    backend.handlers["/c/refresh"] = () => (extensions++ < 1 ? { result: { expire_at: nowS() + 1 } } : { result: { expired: true } });
    const c = await socketOf(gw, user);
    await waitFor(() => backend.callsTo("/c/refresh", user).length >= 1, { what: "first refresh", timeoutMs: 10_000 });
    expect(c.open).toBe(true);
    expect(await c.waitClosed(10_000)).toBe(4001);
    const calls = backend.callsTo("/c/refresh", user);
    expect(calls).toHaveLength(2);
    expect(calls[0]!.body).toMatchObject({ transport: "websocket", protocol: "json", encoding: "json", user, client: expect.any(String) });
  });

  it("centrifugo: an error answer closes with 4001, a disconnect answer with its code, a backend down with 4001", async () => {
    allowAll();
    backend.handlers["/c/connect"] = () => ({ result: { expire_at: nowS() + 1 } });
    backend.handlers["/c/refresh"] = () => ({ error: { code: 103, message: "no" } });
    const a = await socketOf(gw, uniq("referr"));
    expect(await a.waitClosed(10_000)).toBe(4001);
    backend.handlers["/c/refresh"] = () => ({ disconnect: { code: 4505, reason: "gone" } });
    const b = await socketOf(gw, uniq("refdisc"));
    expect(await b.waitClosed(10_000)).toBe(4505);
    expect(b.closeReason).toBe("gone");
    // the connect hook must answer for the socket to open: the backend goes down once it has
    backend.handlers["/c/connect"] = () => ({ result: {} });
    const d = await socketOf(gw, uniq("refdown"), nowS() + 1);
    backend.down = true;
    expect(await d.waitClosed(10_000)).toBe(4001);
  });

  it("native: {allow:true, exp} extends a token's expiry; {allow:false} closes with 4001", async () => {
    allowAll();
    const user = uniq("nrefresh");
    let n = 0;
    backend.handlers["/n/refresh"] = () => (n++ < 1 ? { allow: true, exp: nowS() + 1 } : { allow: false });
    const c = await socketOf(gwNative, user, nowS() + 1);
    await waitFor(() => backend.callsTo("/n/refresh", user).length >= 1, { what: "first refresh", timeoutMs: 10_000 });
    expect(c.open).toBe(true);
    expect(await c.waitClosed(10_000)).toBe(4001);
    expect(backend.callsTo("/n/refresh", user)[0]!.body).toMatchObject({ user, claims: { channels: { sub: ["c.>"] } }, transport: "websocket" });
  });

  it("backend down: the connection closes with 4001 at its expiry (fail closed)", async () => {
    allowAll();
    const c = await socketOf(gwNative, uniq("nrefdown"), nowS() + 1);
    backend.down = true;
    expect(await c.waitClosed(10_000)).toBe(4001);
    expect(c.closeReason).toContain("could not be refreshed");
  });
});

describe("sub_refresh hook — a subscription's expiry", () => {
  it("centrifugo: the subscribe result's expire_at; sub_refresh extends it, then expired:true ends just that subscription", async () => {
    allowAll();
    const user = uniq("subref");
    const c = await socketOf(gw, user);
    backend.handlers["/c/subscribe"] = (b) => ({ result: b.channel === `c:exp.${user}` ? { expire_at: nowS() + 1 } : {} });
    let n = 0;
    backend.handlers["/c/sub_refresh"] = () => (n++ < 1 ? { result: { expire_at: nowS() + 1 } } : { result: { expired: true } });
    await c.sub(`c.exp.${user}`);
    await c.sub(`c.keep.${user}`);
    const ended = await waitFor(() => c.frames.find((f) => f.op === "err" && f.id === undefined), { what: "subscription end", timeoutMs: 10_000 });
    expect(ended).toMatchObject({ code: "forbidden", message: expect.stringContaining(`subscription c.exp.${user} ended`) });
    const calls = backend.callsTo("/c/sub_refresh", user);
    expect(calls).toHaveLength(2);
    expect(calls[0]!.body).toMatchObject({ transport: "websocket", user, channel: `c:exp.${user}` });
    // the socket and the other subscription go on
    expect(c.open).toBe(true);
    expect(await c.request({ op: "unsub", channel: `c.keep.${user}` })).toMatchObject({ op: "ok" });
    expect(await c.request({ op: "unsub", channel: `c.exp.${user}` })).toMatchObject({ op: "err", code: "not_subscribed" });
  });

  it("centrifugo: an error answer ends the subscription with its code and appCode", async () => {
    allowAll();
    const user = uniq("subreferr");
    const c = await socketOf(gw, user);
    backend.handlers["/c/subscribe"] = () => ({ result: { expire_at: nowS() + 1 } });
    backend.handlers["/c/sub_refresh"] = () => ({ error: { code: 1003, message: "membership ended" } });
    await c.sub(`c.e.${user}`);
    const ended = await waitFor(() => c.frames.find((f) => f.op === "err" && f.id === undefined), { what: "subscription end", timeoutMs: 10_000 });
    expect(ended).toMatchObject({ code: "forbidden", appCode: "1003", message: expect.stringContaining("membership ended") });
    expect(c.open).toBe(true);
  });

  it("native: {allow:true, exp} extends; {allow:false} ends the subscription", async () => {
    allowAll();
    const user = uniq("nsubref");
    const c = await socketOf(gwNative, user);
    backend.handlers["/n/subscribe"] = () => ({ allow: true, exp: nowS() + 1, data: { hello: 1 } });
    let n = 0;
    backend.handlers["/n/sub_refresh"] = () => (n++ < 1 ? { allow: true, exp: nowS() + 1 } : { allow: false });
    expect(await c.sub(`c.n.${user}`)).toMatchObject({ data: { hello: 1 } });
    const ended = await waitFor(() => c.frames.find((f) => f.op === "err" && f.id === undefined), { what: "subscription end", timeoutMs: 10_000 });
    expect(ended).toMatchObject({ code: "forbidden", message: expect.stringContaining(`subscription c.n.${user} ended`) });
    expect(backend.callsTo("/n/sub_refresh", user)).toHaveLength(2);
    expect(backend.callsTo("/n/sub_refresh", user)[0]!.body).toMatchObject({ user, channel: `c.n.${user}` });
  });

  it("backend down: the subscription ends with hook_unavailable (temporary); the socket stays", async () => {
    allowAll();
    const user = uniq("nsubdown");
    const c = await socketOf(gwNative, user);
    backend.handlers["/n/subscribe"] = () => ({ allow: true, exp: nowS() + 1 });
    await c.sub(`c.d.${user}`);
    backend.down = true;
    const ended = await waitFor(() => c.frames.find((f) => f.op === "err" && f.id === undefined), { what: "subscription end", timeoutMs: 10_000 });
    expect(ended).toMatchObject({ code: "hook_unavailable", temporary: true });
    expect(c.open).toBe(true);
  });
});
