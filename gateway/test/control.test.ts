// The server control plane against two real gateway instances (2 workers each) on one nats-server: instance
// A serves /v1/server/… on its admin listener (the primary hands requests to a worker over NATS), instance B
// on its public port (ADMIN_PORT=off). Every operation must reach every worker of both instances.
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { SseReader } from "#testkit/sse-client.js";
import { TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { AUDIENCE, connect, ISSUER, SECRET, sign } from "#testkit/auth.js";
import WebSocket from "ws";
import { GatewayClient, type GatewayEvent } from "../client/src/index.js";
import { metric } from "#testkit/metrics.js";

const API_KEY = "control-api-key-0123456789";
const KEY = { "x-api-key": API_KEY };
let nats: NatsServerHandle;
let a: GatewayHandle;
let b: GatewayHandle;
let nc: NatsConnection;
const clients = new ClientPool();
const streams: SseReader[] = [];
const uniq = uniqueNames();

const env = { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: API_KEY };

beforeAll(async () => {
  nats = await startNatsServer();
  [a, b] = await Promise.all([
    startGateway({ natsUrl: nats.url, workers: 2, logLevel: "info", env }),
    startGateway({ natsUrl: nats.url, workers: 2, logLevel: "info", env, args: ["--admin-port", "off"] }),
  ]);
  nc = await natsConnect({ servers: nats.url });
});
afterAll(async () => {
  clients.closeAll();
  for (const s of streams) s.close();
  await nc?.close();
  await Promise.all([a?.stop(), b?.stop()]);
  await nats?.stop();
});

/** The control plane's address of each instance: A's admin listener, B's public port. */
const doorOf = (gw: GatewayHandle): string => (gw === a ? a.metricsUrl : b.url);

async function control(gw: GatewayHandle, method: "GET" | "POST", path: string, body?: unknown, headers: Record<string, string> = KEY) {
  const r = await fetch(`${doorOf(gw)}/v1/server/${path}`, {
    method,
    headers: { "content-type": "application/json", ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> & { error?: string } };
}

async function userToken(user: string): Promise<string> {
  return sign({ channels: { sub: [">"], pub: [">"] } }, { sub: user });
}

/** `n` sockets of `user` on `gw` (enough that SO_REUSEPORT puts some on each worker, though nothing relies on it). */
async function sockets(gw: GatewayHandle, user: string, n: number): Promise<TestClient[]> {
  const token = await userToken(user);
  const out: TestClient[] = [];
  for (let i = 0; i < n; i++) out.push(clients.track(await connect(gw.wsUrl, { headers: { authorization: `Bearer ${token}` } })));
  return out;
}

async function sse(gw: GatewayHandle, user: string, pattern: string): Promise<SseReader> {
  const s = await SseReader.open(`${gw.url}/v1/channels/${encodeURIComponent(pattern)}/events`, { authorization: `Bearer ${await userToken(user)}` });
  streams.push(s);
  expect(s.status).toBe(200);
  return s;
}

const errEvents = (s: SseReader) => s.events.filter((e) => e.event === "err").map((e) => JSON.parse(e.data) as { code: string; temporary: boolean });

describe("control plane — authorization", () => {
  it("refuses a request without credentials (401) and a user's token (403), on both doors", async () => {
    for (const gw of [a, b]) {
      const none = await control(gw, "POST", "disconnect", { user: "x", reconnect: true }, {});
      expect(none.status).toBe(401);
      const token = await control(gw, "GET", "occupancy?channel=x", undefined, { authorization: `Bearer ${await userToken("x")}` });
      expect(token.status).toBe(403);
      expect(token.json.error).toBe("forbidden");
      const bad = await control(gw, "POST", "disconnect", { user: "x", reconnect: "yes" });
      expect(bad.status).toBe(400);
    }
  });

  it("the public port has no control routes when the admin listener serves them", async () => {
    const r = await fetch(`${a.url}/v1/server/occupancy?channel=x`, { headers: KEY });
    expect(r.status).toBe(404);
  });
});

describe("control plane — disconnect", () => {
  it("reconnect:false closes every socket and SSE stream of the user on both instances with 4403", async () => {
    const user = uniq("kick");
    const mine = [...(await sockets(a, user, 3)), ...(await sockets(b, user, 3))];
    const other = (await sockets(a, uniq("stay"), 1))[0]!;
    const stream = await sse(b, user, uniq("kick.ch"));
    const r = await control(a, "POST", "disconnect", { user, reconnect: false, reason: "account closed" });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ user, closed: 7, websocket: 6, sse: 1, instances: 2, workers: 4, complete: true });
    for (const c of mine) expect(await c.waitClosed()).toBe(4403);
    expect(mine[0]!.closeReason).toBe("account closed");
    await waitFor(() => stream.ended || undefined, { what: "SSE stream end" });
    expect(errEvents(stream)).toEqual([expect.objectContaining({ code: "disconnected", temporary: false })]);
    expect(other.open).toBe(true);
  });

  it("reconnect:true closes with 4012, through the public port's door", async () => {
    const user = uniq("bounce");
    const mine = [...(await sockets(a, user, 2)), ...(await sockets(b, user, 2))];
    const r = await control(b, "POST", "disconnect", { user, reconnect: true });
    expect(r.json).toMatchObject({ closed: 4, instances: 2, workers: 4, complete: true });
    for (const c of mine) expect(await c.waitClosed()).toBe(4012);
  });
});

describe("control plane — the SDK", () => {
  it("forgets a subscription the server ended, reconnects after 4012 without it, and stops after 4403", { timeout: 20_000 }, async () => {
    const user = uniq("sdk");
    const [ended, kept] = [uniq("sdk.ended"), uniq("sdk.kept")];
    const events: GatewayEvent[] = [];
    const c = new GatewayClient(b.wsUrl, { WebSocket, token: await userToken(user), minDelayMs: 20, maxDelayMs: 200 });
    for (const t of ["disconnected", "connected", "resubscribed", "error"] as const) c.on(t, (e) => events.push(e));
    try {
      await c.connect();
      await c.subscribe(ended, () => undefined).ready;
      await c.subscribe(kept, () => undefined).ready;
      await control(a, "POST", "unsubscribe", { user, channel: ended });
      const err = await waitFor(() => events.find((e) => e.type === "error"), { what: "the SDK's error for the ended subscription" });
      expect(err).toMatchObject({ channel: ended, error: { code: "unsubscribed", temporary: false } });
      await control(a, "POST", "disconnect", { user, reconnect: true });
      // The first connect emitted "resubscribed" with no subscription: the one after 4012 carries `kept`.
      await waitFor(() => events.find((e) => e.type === "resubscribed" && e.subscriptions === 1), { what: "the SDK back after 4012" });
      expect(events.find((e) => e.type === "disconnected")).toMatchObject({ code: 4012, willReconnect: true });
      type Conn = { subscriptions: { channel: string }[] };
      const back = (await control(a, "GET", `users/${user}`)).json.connections as Conn[];
      expect(back.flatMap((x) => x.subscriptions.map((s) => s.channel))).toEqual([kept]);
      await control(a, "POST", "disconnect", { user, reconnect: false, reason: "gone" });
      await waitFor(() => events.find((e) => e.type === "disconnected" && e.code === 4403), { what: "the 4403 close" });
      expect(events.filter((e) => e.type === "disconnected").at(-1)).toMatchObject({ code: 4403, willReconnect: false });
      // Stopped: nothing connects again (the user's connection count stays 0).
      expect((await control(a, "GET", `users/${user}`)).json.connections).toEqual([]);
      expect(c.connected).toBe(false);
    } finally {
      c.close();
    }
  });
});

describe("control plane — unsubscribe", () => {
  it("ends the user's subscriptions within the channel on both instances with an unsub frame; others go on", async () => {
    const user = uniq("unsub");
    const [x, y] = [uniq("room.x"), uniq("room.y")];
    const mine = [...(await sockets(a, user, 2)), ...(await sockets(b, user, 2))];
    for (const c of mine) {
      await c.sub(x);
      await c.sub(y);
    }
    const stream = await sse(a, user, x);
    const r = await control(b, "POST", "unsubscribe", { user, channel: x });
    expect(r.json).toMatchObject({ user, ended: 5, websocket: 4, sse: 1, complete: true });
    for (const c of mine) await waitFor(() => c.frames.find((f) => f.op === "unsub" && f.channel === x), { what: "unsub frame" });
    await waitFor(() => stream.ended || undefined, { what: "SSE stream end" });
    expect(errEvents(stream)).toEqual([expect.objectContaining({ code: "unsubscribed", temporary: false })]);
    // Still subscribed to y, no longer to x: a message on each reaches only y's subscription.
    await fetch(`${a.url}/v1/publish/${x}`, { method: "POST", headers: { ...KEY, "content-type": "application/json" }, body: '{"n":1}' });
    await fetch(`${a.url}/v1/publish/${y}`, { method: "POST", headers: { ...KEY, "content-type": "application/json" }, body: '{"n":2}' });
    for (const c of mine) await waitFor(() => c.msgs.find((m) => m.channel === y), { what: `message on ${y}` });
    expect(mine.flatMap((c) => c.msgs).filter((m) => m.channel === x)).toEqual([]);
    for (const c of mine) expect(c.open).toBe(true);
  });
});

describe("control plane — occupancy", () => {
  it("sums subscribers across instances for a channel (wildcards that receive it included) and a pattern", async () => {
    const base = uniq("occ");
    const ch = `${base}.a`;
    const subs = [...(await sockets(a, uniq("o"), 3)), ...(await sockets(b, uniq("o"), 2))];
    for (const c of subs) await c.sub(ch);
    await subs[0]!.sub(`${base}.*`);
    await subs[4]!.sub(`${base}.b`);
    await sse(b, uniq("o"), ch);
    const byChannel = await control(a, "GET", `occupancy?channel=${ch}`);
    expect(byChannel.json).toMatchObject({ channel: ch, subscribers: 7, patterns: { [ch]: 6, [`${base}.*`]: 1 }, instances: 2, workers: 4, complete: true });
    const byPattern = await control(b, "GET", `occupancy?pattern=${encodeURIComponent(`${base}.>`)}`);
    expect(byPattern.json).toMatchObject({ subscribers: 8, patterns: { [ch]: 6, [`${base}.*`]: 1, [`${base}.b`]: 1 }, complete: true });
    expect((await control(a, "GET", `occupancy?channel=${base}.zzz`)).json).toMatchObject({ subscribers: 1 }); // the wildcard only
  });
});

describe("control plane — broadcast", () => {
  it("stores one message per channel and every channel's subscribers on both instances get it", async () => {
    const channels = [uniq("bc.one"), uniq("bc.two"), uniq("bc.three")];
    const [s1] = await sockets(a, uniq("bcu"), 1);
    const [s2] = await sockets(b, uniq("bcu"), 1);
    await s1!.sub(channels[0]!);
    await s2!.sub(channels[1]!);
    const r = await control(a, "POST", "broadcast", { channels, data: { notice: "maintenance" } });
    expect(r.status).toBe(200);
    const results = r.json.results as { channel: string; seq: number }[];
    expect(results.map((x) => x.channel)).toEqual(channels);
    expect(new Set(results.map((x) => x.seq)).size).toBe(3);
    for (const ch of channels) {
      const h = (await (await fetch(`${b.url}/v1/channels/${ch}/messages?last=10`, { headers: KEY })).json()) as { messages: { data: unknown }[] };
      expect(h.messages.map((m) => m.data)).toEqual([{ notice: "maintenance" }]);
    }
    await waitFor(() => s1!.msgs.find((m) => m.channel === channels[0]), { what: "broadcast on A" });
    await waitFor(() => s2!.msgs.find((m) => m.channel === channels[1]), { what: "broadcast on B" });
    const tooMany = await control(b, "POST", "broadcast", { channels: Array.from({ length: 1001 }, (_, i) => `many.c${i}`), data: 1 });
    expect(tooMany.status).toBe(400);
  });
});

describe("control plane — users", () => {
  it("lists the user's connections and subscriptions on both instances", async () => {
    const user = uniq("who");
    const [wa] = await sockets(a, user, 1);
    const [wb] = await sockets(b, user, 1);
    await wa!.sub("who.a");
    await wb!.sub("who.b");
    await sse(b, user, "who.sse");
    const r = await control(a, "GET", `users/${user}`);
    type Conn = { transport: string; instance: string; subscriptions: { channel: string }[] };
    const conns = r.json.connections as Conn[];
    expect(conns).toHaveLength(3);
    expect(new Set(conns.map((c) => c.instance)).size).toBe(2);
    expect(conns.map((c) => `${c.transport}:${c.subscriptions.map((s) => s.channel).join(",")}`).sort()).toEqual([
      "sse:who.sse",
      "websocket:who.a",
      "websocket:who.b",
    ]);
    expect(r.json).toMatchObject({ instances: 2, workers: 4, complete: true });
  });
});

describe("control plane — NATS subjects", () => {
  it("a backend's request on evctl.server.<op> gets the same merged answer", async () => {
    const ch = uniq("nats.occ");
    for (const c of [...(await sockets(a, uniq("n"), 1)), ...(await sockets(b, uniq("n"), 1))]) await c.sub(ch);
    const m = await nc.request("evctl.server.occupancy", JSON.stringify({ channel: ch }), { timeout: 5_000 });
    expect(m.json()).toMatchObject({ channel: ch, subscribers: 2, instances: 2, workers: 4, complete: true });
    const bad = await nc.request("evctl.server.disconnect", JSON.stringify({ user: "" }), { timeout: 5_000 });
    expect(bad.json()).toMatchObject({ error: "bad_request" });
    // Counted by the worker that took it, on either instance.
    const counted = (gw: GatewayHandle) => metric(gw.metricsUrl, "fanout_control_requests_total", { op: "disconnect", result: "bad_request" });
    expect((await counted(a)) + (await counted(b))).toBeGreaterThanOrEqual(1);
  });
});
