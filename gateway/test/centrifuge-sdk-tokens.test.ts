// The Centrifuge client protocol door (/connection/websocket) with the real JavaScript SDK (`centrifuge` 5.7.4 in
// Node): connection token claims (exp with refresh, info, expire_at, channels and subs as server-side
// subscriptions), subscription tokens with sub_refresh, the control plane reaching this door's sockets, and
// Fossil deltas. One gateway (1 worker, JWT_CLOCK_TOLERANCE 1 s) on a real nats-server for every test.
import { Centrifuge, type Subscription, type PublicationContext } from "centrifuge";
import { Centrifuge as CentrifugeProtobuf } from "centrifuge/build/protobuf";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { AUDIENCE, ISSUER, SECRET, sign } from "#testkit/auth.js";
import { uniqueNames } from "#testkit/clients.js";
import { startTcpProxy, type TcpProxy } from "#testkit/tcp-proxy.js";
import { publishMany } from "#testkit/stream-fill.js";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import { waitFor } from "#testkit/wait.js";

const API_KEY = "centrifuge-tokens-test-key-0123456789";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let js: JetStreamClient;
const clients: Centrifuge[] = [];
const proxies: TcpProxy[] = [];
const uniq = uniqueNames();

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, JWT_CLOCK_TOLERANCE: "1s", API_KEYS: API_KEY },
  });
  nc = await natsConnect({ servers: nats.url });
  js = jetstream(nc);
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  for (const p of proxies) await p.close();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

type Claims = Record<string, unknown>;
const ALL: Claims = { channels: { sub: [">"], pub: [">"] } };

/** A token of `user` with `claims`, expiring after `exp` (10 minutes unless told). */
const token = (user: string, claims: Claims = ALL, exp?: string | number): Promise<string> =>
  sign(claims as Parameters<typeof sign>[0], { sub: user, ...(exp !== undefined ? { exp } : {}) });

const doorUrl = (): string => `ws://127.0.0.1:${gw.port}/connection/websocket`;

/** An SDK client (not yet connected) with the test's short delays. */
function sdk(o: ConstructorParameters<typeof Centrifuge>[1] = {}, url = doorUrl()): Centrifuge {
  const c = new Centrifuge(url, { websocket: WebSocket, minReconnectDelay: 50, maxReconnectDelay: 300, timeout: 10_000, ...o });
  clients.push(c);
  return c;
}

/** A connected SDK client of `user` with `claims`. */
async function client(user: string, claims: Claims = ALL): Promise<Centrifuge> {
  const c = sdk({ token: await token(user, claims) });
  c.connect();
  await c.ready(10_000);
  return c;
}

/** A fresh Centrifugo channel name `cf:<n>` and its gateway channel `cf.<n>`. */
function channel(base: string): { name: string; gw: string } {
  const n = uniq(base);
  return { name: `cf:${n}`, gw: `cf.${n}` };
}

async function httpPublish(gwChannel: string, data: unknown): Promise<number> {
  const r = await fetch(`${gw.url}/v1/publish/${encodeURIComponent(gwChannel)}`, {
    method: "POST",
    body: JSON.stringify(data),
    headers: { "content-type": "application/json", "x-api-key": API_KEY },
  });
  expect(r.ok).toBe(true);
  return ((await r.json()) as { seq: number }).seq;
}

/** A call of Centrifugo's server API (`POST /api/<method>`). */
async function api(method: string, body: unknown): Promise<unknown> {
  const r = await fetch(`${gw.url}/api/${method}`, { method: "POST", body: JSON.stringify(body), headers: { "x-api-key": API_KEY } });
  expect(r.status).toBe(200);
  return r.json();
}

function collect(sub: Subscription): PublicationContext[] {
  const pubs: PublicationContext[] = [];
  sub.on("publication", (p) => pubs.push(p));
  return pubs;
}

describe("centrifuge door — subscription tokens", () => {
  it("a subscription token grants a channel the connection may not read; the SDK refreshes it with sub_refresh and the subscription outlives the first token", async () => {
    const ch = channel("subtoken");
    const c = await client("sub-token-user", { channels: { sub: [], pub: [] } });
    let asked = 0;
    const sub = c.newSubscription(ch.name, {
      minResubscribeDelay: 50,
      getToken: async (ctx) => {
        asked++;
        expect(ctx.channel).toBe(ch.name);
        // Signed with the Centrifugo name, as a Centrifugo backend does; the first expires in 2 s.
        return sign({ channel: ch.name } as Parameters<typeof sign>[0], { sub: "sub-token-user", exp: asked === 1 ? "2s" : "10m" });
      },
    });
    const pubs = collect(sub);
    const events: string[] = [];
    sub.on("subscribing", (e) => events.push(`subscribing ${e.code}`));
    sub.on("unsubscribed", (e) => events.push(`unsubscribed ${e.code}`));
    sub.subscribe();
    await sub.ready(10_000);
    events.length = 0;
    const since = Date.now();
    // The first token's expiry (2 s) and the clock tolerance (1 s) pass: without the sub_refresh the subscription ends then.
    await waitFor(() => (asked >= 2 && Date.now() - since > 4_000) || undefined, { what: "the first token's expiry to pass", timeoutMs: 20_000 });
    await httpPublish(ch.gw, { i: 1 });
    await waitFor(() => pubs.length === 1 || undefined, { what: "a publication after the first token's expiry" });
    expect(events).toEqual([]);
    expect(c.state).toBe("connected");
  }, 30_000);

  it("an expired subscription token ends that subscription alone with 2501; the SDK subscribes again with a new token", async () => {
    const ch = channel("subexpiry");
    const other = channel("other");
    const c = await client("expiring-sub", { channels: { sub: [other.gw], pub: [] } });
    let asked = 0;
    const sub = c.newSubscription(ch.name, {
      minResubscribeDelay: 50,
      maxResubscribeDelay: 300,
      getToken: async () => {
        asked++;
        // The second ask is the SDK's refresh before expiry: the backend cannot answer it (the SDK retries in 10 s or more).
        if (asked === 2) throw new Error("backend busy");
        return sign({ channel: ch.gw } as Parameters<typeof sign>[0], { sub: "expiring-sub", exp: asked === 1 ? "2s" : "10m" });
      },
    });
    const codes: number[] = [];
    sub.on("subscribing", (e) => codes.push(e.code));
    sub.subscribe();
    await sub.ready(10_000);
    const kept = c.newSubscription(other.name);
    const keptPubs = collect(kept);
    kept.subscribe();
    await kept.ready(10_000);
    let left = 0;
    c.on("disconnected", () => left++);
    c.on("connecting", () => left++);
    await waitFor(() => codes.includes(2501) || undefined, { what: "the unsubscribe push with 2501", timeoutMs: 20_000 });
    await waitFor(() => (sub.state === "subscribed" && asked >= 3) || undefined, { what: "the subscription again, with a new token", timeoutMs: 20_000 });
    expect(left).toBe(0);
    expect(kept.state).toBe("subscribed");
    await httpPublish(other.gw, { i: 1 });
    await waitFor(() => keptPubs.length === 1 || undefined, { what: "the other subscription's publication" });
  }, 40_000);

  it("a subscription token for another channel is refused with 103; an expired one with 109", async () => {
    const ch = channel("subwrong");
    const c = await client("wrong-sub", { channels: { sub: [], pub: [] } });
    const wrong = c.newSubscription(ch.name, { token: await sign({ channel: "cf:elsewhere" } as Parameters<typeof sign>[0], { sub: "wrong-sub" }) });
    const refused = new Promise<{ code: number }>((res) => wrong.on("unsubscribed", res));
    wrong.subscribe();
    expect((await refused).code).toBe(103);
    const errors: number[] = [];
    const expired = c.newSubscription(channel("subexpired").name, {
      token: await sign({ channel: "x" } as Parameters<typeof sign>[0], { sub: "wrong-sub", exp: Math.floor(Date.now() / 1000) - 30 }),
      getToken: () => new Promise<string>(() => undefined),
    });
    expired.on("error", (e) => errors.push(e.error.code));
    expired.subscribe();
    await waitFor(() => errors.includes(109) || undefined, { what: "the 109 answer" });
  }, 30_000);
});

describe("centrifuge door — the control plane reaches its connections", () => {
  it("the server API's unsubscribe ends the user's subscription with 2000; its disconnect closes with 3503 (stay away) or 3011 (reconnect)", async () => {
    const ch = channel("ctl");
    const c = await client("ctl-user");
    const sub = c.newSubscription(ch.name);
    const unsubscribed = new Promise<{ code: number }>((res) => sub.on("unsubscribed", res));
    sub.subscribe();
    await sub.ready(10_000);
    expect(await api("unsubscribe", { user: "ctl-user", channel: ch.name })).toEqual({ result: {} });
    expect((await unsubscribed).code).toBe(2000);
    const users = (await (await fetch(`${gw.metricsUrl}/v1/server/users/ctl-user`, { headers: { "x-api-key": API_KEY } })).json()) as {
      connections: unknown[];
    };
    expect(users.connections).toHaveLength(1);
    const connecting = new Promise<{ code: number }>((res) => c.once("connecting", res));
    await api("disconnect", { user: "ctl-user", disconnect: { code: 3000, reason: "move" } });
    expect((await connecting).code).toBe(3011);
    await c.ready(10_000);
    const disconnected = new Promise<{ code: number }>((res) => c.on("disconnected", res));
    await api("disconnect", { user: "ctl-user" });
    expect((await disconnected).code).toBe(3503);
  }, 30_000);
});

/** A raw WebSocket on the door: its replies and pushes as they come, and its close code. */
async function raw(): Promise<{ ws: WebSocket; lines: Record<string, unknown>[]; closed: Promise<number> }> {
  const ws = new WebSocket(doorUrl());
  const lines: Record<string, unknown>[] = [];
  ws.on("message", (d) =>
    lines.push(
      ...String(d)
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, unknown>),
    ),
  );
  const closed = new Promise<number>((res) => ws.once("close", res));
  await new Promise((res) => ws.once("open", res));
  return { ws, lines, closed };
}

const now = (): number => Math.floor(Date.now() / 1000);

describe("centrifuge door — connection token claims", () => {
  it("expire_at, not exp, sets the connection's life: the connect reply's ttl, the SDK's refresh before it", async () => {
    let asked = 0;
    const c = sdk({
      token: await token("expire-at", { ...ALL, expire_at: now() + 2 }),
      getToken: async () => {
        asked++;
        return token("expire-at", { ...ALL, expire_at: now() + 600 });
      },
    });
    const left: number[] = [];
    c.on("connecting", (e) => left.push(e.code));
    c.connect();
    await c.ready(10_000);
    left.length = 0;
    const since = Date.now();
    // The token's exp is 10 minutes away: only expire_at (2 s) makes the SDK refresh, and without it 3005 comes at 3 s.
    await waitFor(() => (asked >= 1 && Date.now() - since > 4_000) || undefined, { what: "the refresh and expire_at to pass", timeoutMs: 20_000 });
    expect(left).toEqual([]);
    expect(c.state).toBe("connected");
  }, 30_000);

  it("an expired connection is closed with 3005; a refresh with an expired token is answered 109, with an invalid one closed with 3500", async () => {
    const a = await raw();
    a.ws.send(JSON.stringify({ id: 1, connect: { token: await token("short", { ...ALL, expire_at: now() + 1 }) } }));
    expect(await a.closed).toBe(3005);
    expect(a.lines[0]).toMatchObject({ id: 1, connect: { expires: true } });
    const b = await raw();
    b.ws.send(JSON.stringify({ id: 1, connect: { token: await token("refresher") } }));
    b.ws.send(JSON.stringify({ id: 2, refresh: { token: await token("refresher", ALL, now() - 30) } }));
    await waitFor(() => b.lines.find((l) => l.id === 2), { what: "the refresh's answer" });
    expect(b.lines.find((l) => l.id === 2)).toMatchObject({ error: { code: 109 } });
    b.ws.send(JSON.stringify({ id: 3, refresh: { token: "not-a-jwt" } }));
    expect(await b.closed).toBe(3500);
  }, 30_000);

  it("channels and subs as Centrifugo's server-side subscriptions: the connect reply names them, publications and the SDK's events arrive, a reconnect recovers what was missed", async () => {
    const a = channel("srv-a");
    const b = channel("srv-b");
    const proxy = await startTcpProxy({ host: "127.0.0.1", port: gw.port });
    proxies.push(proxy);
    const c = sdk({ token: await token("server-subs", { channels: [a.name], subs: { [b.name]: {} } }) }, `ws://127.0.0.1:${proxy.port}/connection/websocket`);
    const subscribed: { channel: string; recoverable: boolean; wasRecovering: boolean; recovered: boolean }[] = [];
    const pubs: PublicationContext[] = [];
    c.on("subscribed", (e) => subscribed.push(e));
    c.on("publication", (p) => pubs.push(p));
    c.connect();
    await c.ready(10_000);
    await waitFor(() => subscribed.length === 2 || undefined, { what: "two server-side subscriptions" });
    expect(subscribed.map((s) => s.channel).sort()).toEqual([a.name, b.name].sort());
    expect(subscribed.every((s) => s.recoverable)).toBe(true);
    await httpPublish(a.gw, { i: 0 });
    await httpPublish(b.gw, { i: 0 });
    await waitFor(() => pubs.length === 2 || undefined, { what: "a publication on each" });
    expect(pubs.map((p) => p.channel).sort()).toEqual([a.name, b.name].sort());
    proxy.refuse(true);
    await waitFor(() => c.state !== "connected" || undefined, { what: "the client to see the link down" });
    await publishMany(js, a.gw, 50, 1);
    proxy.refuse(false);
    await waitFor(() => subscribed.length === 4 || undefined, { what: "the server-side subscriptions again", timeoutMs: 20_000 });
    expect(subscribed.slice(2).every((s) => s.wasRecovering && s.recovered)).toBe(true);
    await httpPublish(a.gw, { i: 51 });
    await waitFor(() => pubs.filter((p) => p.channel === a.name).length >= 52 || undefined, { what: "the missed and the live publications" });
    expect(pubs.filter((p) => p.channel === a.name).map((p) => (p.data as { i: number }).i)).toEqual(Array.from({ length: 52 }, (_, i) => i));
  }, 40_000);
});

/** A document of `n` fields, the field `step` changed to a value of round `round` (non-ASCII text in it too). */
function doc(round: number): string {
  const fields: Record<string, string> = {};
  for (let i = 0; i < 60; i++) fields[`field${i}`] = `value ${i} — héllo wörld ✓ ${i === round % 60 ? `changed in round ${round}` : "unchanged"}`;
  return JSON.stringify({ round, fields });
}

describe("centrifuge door — Fossil deltas", () => {
  for (const f of [
    { name: "JSON", Sdk: Centrifuge, text: (d: unknown) => JSON.stringify(d) },
    { name: "Protobuf", Sdk: CentrifugeProtobuf as unknown as typeof Centrifuge, text: (d: unknown) => new TextDecoder().decode(d as Uint8Array) },
  ])
    it(`${f.name}: delta: "fossil" is answered delta: true; 40 documents with small changes arrive byte for byte, most as deltas`, async () => {
      const ch = channel(`delta-${f.name}`);
      const c = new f.Sdk(doorUrl(), { websocket: WebSocket, token: await token("delta"), minReconnectDelay: 50, maxReconnectDelay: 300, timeout: 10_000 });
      clients.push(c);
      c.connect();
      await c.ready(10_000);
      const sub = c.newSubscription(ch.name, { delta: "fossil" });
      const texts: string[] = [];
      sub.on("publication", (p) => texts.push(f.text(p.data)));
      sub.subscribe();
      await sub.ready(10_000);
      const sent = Array.from({ length: 40 }, (_, i) => doc(i));
      for (const body of sent) {
        const r = await fetch(`${gw.url}/v1/publish/${encodeURIComponent(ch.gw)}`, {
          method: "POST",
          body,
          headers: { "content-type": "application/json", "x-api-key": API_KEY },
        });
        expect(r.ok).toBe(true);
      }
      await waitFor(() => texts.length === sent.length || undefined, { what: "40 publications" });
      expect(texts).toEqual(sent);
      const stats = sub.deltaStats();
      expect(stats.numDeltaPayloads).toBeGreaterThanOrEqual(30);
      expect(stats.bytesReceived).toBeLessThan(stats.bytesDecoded / 4);
    }, 30_000);
});
