// The Centrifuge client protocol door (/connection/websocket) driven by the real JavaScript SDK from npm
// (`centrifuge` 5.7.4, in Node with the `ws` package as its WebSocket) against the real gateway (dist, 2
// workers) on a real nats-server, over both its formats: JSON (the SDK's default build) and Protobuf (its
// `centrifuge/build/protobuf` build), one gateway for both. The link of the recovery scenarios runs through a
// TCP proxy the test cuts.
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { Centrifuge, type Subscription, type PublicationContext, type SubscribedContext } from "centrifuge";
import { Centrifuge as CentrifugeProtobuf } from "centrifuge/build/protobuf";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, waitForNewEpoch, type GatewayHandle } from "#testkit/gateway.js";
import { AUDIENCE, ISSUER, SECRET, sign } from "#testkit/auth.js";
import { HookBackend } from "#testkit/hook-backend.js";
import { startTcpProxy, type TcpProxy } from "#testkit/tcp-proxy.js";
import { publishMany } from "#testkit/stream-fill.js";
import { uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { decodeDelimited, encodeDelimited } from "../src/protocol/centrifuge/proto-wire.js";

/** Ten times Centrifugo's default recovery limit (history_size 300 is the most it can recover). */
const MISSED = 3_000;

let nats: NatsServerHandle;
let gw: GatewayHandle;
let backend: HookBackend;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
const clients: Centrifuge[] = [];
const proxies: TcpProxy[] = [];
const uniq = uniqueNames();

beforeAll(async () => {
  backend = await HookBackend.start();
  backend.answer = (c) => (c.path === "/rpc" ? { body: { data: { method: c.body.method, echo: c.body.data } } } : { body: { allow: true } });
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 2,
    env: {
      JWT_SECRET: SECRET,
      JWT_ISSUER: ISSUER,
      JWT_AUDIENCE: AUDIENCE,
      RPC_HOOK_URL: backend.url("/rpc"),
      CENTRIFUGE_PING_INTERVAL: "2s",
      CENTRIFUGE_CONNECT_TIMEOUT: "1s",
    },
  });
  nc = await natsConnect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  for (const p of proxies) await p.close();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
  await backend?.stop();
});

type Claims = Record<string, unknown>;
const ALL: Claims = { channels: { sub: [">"], pub: [">"] }, rpc: [">"], info: { name: "tester" } };

/** A token of `user` with `claims` (everything allowed unless told). */
const token = (user: string, claims: Claims = ALL): Promise<string> => sign(claims, { sub: user });

/**
 * One of the SDK's formats: its build, and how apps hand it data and read it back (the Protobuf build sends
 * and gives bytes, here JSON's; it gives offsets as protobufjs Longs).
 */
type Format = { name: string; Sdk: typeof Centrifuge; data: (v: unknown) => unknown; value: (d: unknown) => unknown };
const FORMATS: readonly Format[] = [
  { name: "JSON", Sdk: Centrifuge, data: (v) => v, value: (d) => d },
  {
    name: "Protobuf",
    Sdk: CentrifugeProtobuf as unknown as typeof Centrifuge,
    data: (v) => new TextEncoder().encode(JSON.stringify(v)),
    value: (d) => JSON.parse(new TextDecoder().decode(d as Uint8Array)) as unknown,
  },
];

/** An SDK client of `user` on `url` (the gateway's door unless a proxy's), connected. */
async function sdkClient(f: Format, user: string, o: { claims?: Claims; url?: string } = {}): Promise<Centrifuge> {
  const c = new f.Sdk(o.url ?? `ws://127.0.0.1:${gw.port}/connection/websocket`, {
    websocket: WebSocket,
    token: await token(user, o.claims),
    minReconnectDelay: 50,
    maxReconnectDelay: 300,
    timeout: 10_000,
  });
  clients.push(c);
  c.connect();
  await c.ready(10_000);
  return c;
}

/** A subscription that collects its publications and subscribed events. */
function collect(sub: Subscription): { pubs: PublicationContext[]; subscribed: SubscribedContext[] } {
  const out = { pubs: [] as PublicationContext[], subscribed: [] as SubscribedContext[] };
  sub.on("publication", (p) => out.pubs.push(p));
  sub.on("subscribed", (s) => out.subscribed.push(s));
  return out;
}

/** A fresh Centrifugo channel name `cf:<n>` and its gateway channel `cf.<n>`. */
function channel(base: string): { name: string; gw: string } {
  const n = uniq(base);
  return { name: `cf:${n}`, gw: `cf.${n}` };
}

/** A proxy to the gateway's port: its door's URL through it. */
async function proxied(): Promise<{ proxy: TcpProxy; url: string }> {
  const proxy = await startTcpProxy({ host: "127.0.0.1", port: gw.port });
  proxies.push(proxy);
  return { proxy, url: `ws://127.0.0.1:${proxy.port}/connection/websocket` };
}

async function httpPublish(gwChannel: string, data: unknown): Promise<number> {
  const r = await fetch(`${gw.url}/v1/publish/${encodeURIComponent(gwChannel)}`, {
    method: "POST",
    body: JSON.stringify(data),
    headers: { "content-type": "application/json", authorization: `Bearer ${await token("publisher")}` },
  });
  expect(r.ok).toBe(true);
  return ((await r.json()) as { seq: number }).seq;
}

describe.each(FORMATS)("centrifuge door — the JavaScript SDK over $name", (f) => {
  const client = (user: string, o: { claims?: Claims; url?: string } = {}) => sdkClient(f, user, o);
  const indexes = (pubs: readonly { data: unknown }[]): number[] => pubs.map((p) => (f.value(p.data) as { i: number }).i);

  it("connects with a token and receives publications in order, from HTTP and from another client", async () => {
    const ch = channel("order");
    const reader = await client("reader");
    const sub = reader.newSubscription(ch.name);
    const got = collect(sub);
    sub.subscribe();
    await sub.ready(10_000);
    const writer = await client("writer");
    for (let i = 0; i < 5; i++) await httpPublish(ch.gw, { i });
    for (let i = 5; i < 10; i++) await writer.publish(ch.name, f.data({ i }));
    await waitFor(() => got.pubs.length >= 10 || undefined, { what: "10 publications" });
    expect(indexes(got.pubs)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(got.pubs.every((p) => p.channel === ch.name)).toBe(true);
    // Offsets are the stream's seqs: increasing, not consecutive per channel.
    const offsets = got.pubs.map((p) => Number(p.offset));
    expect(offsets.every((o, i) => i === 0 || o > (offsets[i - 1] as number))).toBe(true);
  }, 30_000);

  it(`recovers ${MISSED} publications missed while the link was down, then goes on live: no gap, no duplicate`, async () => {
    const ch = channel("recover");
    const { proxy, url } = await proxied();
    const c = await client("recoverer", { url });
    const sub = c.newSubscription(ch.name, { recoverable: true, positioned: true });
    const got = collect(sub);
    sub.subscribe();
    await sub.ready(10_000);
    expect(got.subscribed[0]).toMatchObject({ recoverable: true, wasRecovering: false });
    await httpPublish(ch.gw, { i: 0 });
    await waitFor(() => got.pubs.length === 1 || undefined, { what: "the first publication" });
    proxy.refuse(true); // cuts the link and keeps it down
    await waitFor(() => c.state !== "connected" || undefined, { what: "the client to see the link down" });
    await publishMany(js, ch.gw, MISSED, 1);
    proxy.refuse(false);
    await waitFor(() => got.subscribed.length === 2 || undefined, { what: "the resubscribe", timeoutMs: 20_000 });
    expect(got.subscribed[1]).toMatchObject({ wasRecovering: true, recovered: true });
    await waitFor(() => got.pubs.length >= 1 + MISSED || undefined, { what: `${MISSED} recovered publications`, timeoutMs: 60_000 });
    await httpPublish(ch.gw, { i: MISSED + 1 });
    await waitFor(() => got.pubs.length >= MISSED + 2 || undefined, { what: "the live publication after recovery" });
    expect(indexes(got.pubs)).toEqual(Array.from({ length: MISSED + 2 }, (_, i) => i));
  }, 120_000);

  it("answers a recovery from another epoch (the stream was recreated) recovered: false, and goes on live", async () => {
    const ch = channel("epoch");
    const { proxy, url } = await proxied();
    const c = await client("epoch", { url });
    const sub = c.newSubscription(ch.name, { recoverable: true });
    const got = collect(sub);
    sub.subscribe();
    await sub.ready(10_000);
    await httpPublish(ch.gw, { i: 0 });
    await waitFor(() => got.pubs.length === 1 || undefined, { what: "the first publication" });
    const before = got.subscribed[0]?.streamPosition?.epoch;
    proxy.refuse(true);
    await waitFor(() => c.state !== "connected" || undefined, { what: "the client to see the link down" });
    const old = await jsm.streams.info("FANOUT_CHANNELS");
    const from = gw.logs.length;
    await jsm.streams.delete("FANOUT_CHANNELS");
    await jsm.streams.add(old.config);
    await waitForNewEpoch(gw, "FANOUT_CHANNELS", from);
    proxy.refuse(false);
    await waitFor(() => got.subscribed.length === 2 || undefined, { what: "the resubscribe", timeoutMs: 20_000 });
    expect(got.subscribed[1]).toMatchObject({ wasRecovering: true, recovered: false });
    expect(got.subscribed[1]?.streamPosition?.epoch).not.toBe(before);
    await httpPublish(ch.gw, { i: 1 });
    await waitFor(() => got.pubs.length === 2 || undefined, { what: "the live publication" });
    expect(indexes(got.pubs)).toEqual([0, 1]);
  }, 60_000);

  it("a stream recreated under a live connection closes it with 3010; the SDK comes back and is told recovered: false", async () => {
    const ch = channel("recreated");
    const c = await client("live-epoch");
    const sub = c.newSubscription(ch.name, { recoverable: true });
    const got = collect(sub);
    const disconnects: number[] = [];
    c.on("connecting", (e) => disconnects.push(e.code));
    sub.subscribe();
    await sub.ready(10_000);
    await httpPublish(ch.gw, { i: 0 });
    await waitFor(() => got.pubs.length === 1 || undefined, { what: "the first publication" });
    const old = await jsm.streams.info("FANOUT_CHANNELS");
    await jsm.streams.delete("FANOUT_CHANNELS");
    await jsm.streams.add(old.config);
    await waitFor(() => got.subscribed.length === 2 || undefined, { what: "the resubscribe", timeoutMs: 20_000 });
    expect(disconnects).toContain(3010);
    expect(got.subscribed[1]).toMatchObject({ wasRecovering: true, recovered: false });
    await httpPublish(ch.gw, { i: 1 });
    await waitFor(() => got.pubs.length === 2 || undefined, { what: "the live publication" });
    expect(indexes(got.pubs)).toEqual([0, 1]);
  }, 60_000);

  it("presence, presence_stats, join and leave", async () => {
    const ch = channel("presence");
    const a = await client("alice");
    const subA = a.newSubscription(ch.name, { joinLeave: true });
    const joins: string[] = [];
    const leaves: string[] = [];
    subA.on("join", (j) => joins.push(j.info.user));
    subA.on("leave", (l) => leaves.push(l.info.user));
    subA.subscribe();
    await subA.ready(10_000);
    const b = await client("bob");
    const subB = b.newSubscription(ch.name);
    subB.subscribe();
    await subB.ready(10_000);
    await waitFor(() => joins.includes("bob") || undefined, { what: "bob's join" });
    const p = await subA.presence();
    expect(
      Object.values(p.clients)
        .map((x) => x.user)
        .sort(),
    ).toEqual(["alice", "bob"]);
    expect(f.value(Object.values(p.clients).find((x) => x.user === "bob")?.connInfo)).toEqual({ name: "tester" });
    expect(await subA.presenceStats()).toEqual({ numClients: 2, numUsers: 2 });
    subB.unsubscribe();
    await waitFor(() => leaves.includes("bob") || undefined, { what: "bob's leave" });
    expect(await a.presenceStats(ch.name)).toEqual({ numClients: 1, numUsers: 1 });
  }, 30_000);

  it("history with limit, and newest first with reverse", async () => {
    const ch = channel("history");
    const c = await client("historian");
    for (let i = 0; i < 5; i++) await httpPublish(ch.gw, { i });
    const forward = await c.history(ch.name, { limit: 3 });
    expect(indexes(forward.publications)).toEqual([0, 1, 2]);
    const back = await c.history(ch.name, { limit: 3, reverse: true });
    expect(indexes(back.publications)).toEqual([4, 3, 2]);
    expect(Number(back.offset)).toBe(Number(back.publications[0]?.offset));
    expect(back.epoch).toBe(forward.epoch);
  }, 30_000);

  it("rpc goes to the backend's RPC hook and answers its data", async () => {
    const c = await client("caller");
    const r = await c.rpc("getCurrentYear", f.data({ tz: "UTC" }));
    expect(f.value(r.data)).toEqual({ method: "getCurrentYear", echo: { tz: "UTC" } });
  }, 30_000);

  it("a permission refused: subscribe and publish answer 103, the subscription ends", async () => {
    const c = await client("limited", { claims: { channels: { sub: ["cf.open.>"], pub: [] } } });
    const sub = c.newSubscription("cf:secret.x");
    const unsubscribed = new Promise<{ code: number }>((res) => sub.on("unsubscribed", res));
    sub.subscribe();
    expect((await unsubscribed).code).toBe(103);
    await expect(c.publish("cf:open.x", f.data({ i: 1 }))).rejects.toMatchObject({ code: 103 });
  }, 30_000);

  it("a connection token refreshed by the SDK before it expires keeps the connection past the old token's expiry", async () => {
    let fresh = 0;
    const c = new f.Sdk(`ws://127.0.0.1:${gw.port}/connection/websocket`, {
      websocket: WebSocket,
      token: await sign(ALL, { sub: "refresher", exp: "3s" }),
      getToken: async () => {
        fresh++;
        return token("refresher");
      },
    });
    clients.push(c);
    c.connect();
    await c.ready(10_000);
    const left: number[] = [];
    c.on("connecting", (e) => left.push(e.code));
    c.on("disconnected", (e) => left.push(e.code));
    const since = Date.now();
    // The old token expires after 3 s and the gateway's clock tolerance (5 s): without the refresh, 3005 by then.
    await waitFor(() => (fresh >= 1 && Date.now() - since > 9_000) || undefined, { what: "the old token's expiry to pass", timeoutMs: 20_000 });
    expect(left).toEqual([]);
    expect(c.state).toBe("connected");
  }, 30_000);

  it("an invalid token is refused with 3500 and the SDK stays away", async () => {
    const c = new f.Sdk(`ws://127.0.0.1:${gw.port}/connection/websocket`, { websocket: WebSocket, token: "not-a-jwt" });
    clients.push(c);
    const disconnected = new Promise<{ code: number }>((res) => c.on("disconnected", res));
    c.connect();
    expect((await disconnected).code).toBe(3500);
  }, 30_000);
});

/** A raw WebSocket on the door: its lines as they come, and its close code. */
async function raw(protocols?: string): Promise<{ ws: WebSocket; lines: unknown[]; closed: Promise<number> }> {
  const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/connection/websocket`, protocols);
  const lines: unknown[] = [];
  ws.on("message", (d) =>
    lines.push(
      ...String(d)
        .split("\n")
        .map((l) => JSON.parse(l) as unknown),
    ),
  );
  const closed = new Promise<number>((res) => ws.once("close", res));
  await new Promise((res) => ws.once("open", res));
  return { ws, lines, closed };
}

describe("centrifuge door — the wire", () => {
  it("several commands in one frame, each answered by its id; a sub_refresh of a subscription no token granted is a bad request; an unknown channel's unsubscribe is done", async () => {
    const { ws, lines } = await raw();
    const cmds = [
      { id: 1, connect: { token: await token("wire") } },
      { id: 2, subscribe: { channel: "cf:wire" } },
      { id: 3, history: { channel: "cf:wire", limit: 0 } },
      { id: 4, sub_refresh: { channel: "cf:wire", token: "x" } },
      { id: 5, unsubscribe: { channel: "cf:elsewhere" } },
    ];
    ws.send(cmds.map((c) => JSON.stringify(c)).join("\n"));
    const byId = (id: number) => lines.find((l) => (l as { id?: number }).id === id);
    await waitFor(() => [1, 2, 3, 4, 5].every((id) => byId(id)) || undefined, { what: "five replies" });
    expect(byId(2)).toEqual({ id: 2, subscribe: {} });
    expect(byId(3)).toMatchObject({ id: 3, history: { publications: [] } });
    expect(byId(4)).toMatchObject({ id: 4, error: { code: 107 } });
    expect(byId(5)).toEqual({ id: 5, unsubscribe: {} });
    ws.close();
  }, 30_000);

  it("a command before connect closes with 3501; no connect in time with 3502", async () => {
    const early = await raw();
    early.ws.send(JSON.stringify({ id: 1, subscribe: { channel: "cf:x" } }));
    expect(await early.closed).toBe(3501);
    const idle = await raw();
    expect(await idle.closed).toBe(3502);
  }, 30_000);

  it("Protobuf: several length-prefixed commands in one binary frame, each answered by its id; a length that lies closes with 3501", async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/connection/websocket`, "centrifuge-protobuf");
    const replies: Record<string, unknown>[] = [];
    const binary: boolean[] = [];
    ws.on("message", (d, isBinary) => {
      binary.push(isBinary);
      replies.push(...decodeDelimited("Reply", d as Buffer, 1_000, { mayNotFitJson: false }));
    });
    const closed = new Promise<number>((res) => ws.once("close", res));
    await new Promise((res) => ws.once("open", res));
    expect(ws.protocol).toBe("centrifuge-protobuf");
    const cmds = [
      { id: 1, connect: { token: await token("pwire") } },
      { id: 2, subscribe: { channel: "cf:pwire" } },
      { id: 3, history: { channel: "cf:pwire", limit: 0 } },
    ];
    ws.send(Buffer.concat(cmds.map((c) => encodeDelimited("Command", c))));
    const byId = (id: number) => replies.find((r) => r.id === id);
    await waitFor(() => [1, 2, 3].every((id) => byId(id)) || undefined, { what: "three replies" });
    expect(byId(1)).toMatchObject({ connect: { client: expect.any(String), ping: 2, pong: true } });
    expect(byId(2)).toEqual({ id: 2, subscribe: {} });
    expect(byId(3)).toMatchObject({ id: 3, history: { epoch: expect.any(String) } });
    expect(binary.every(Boolean)).toBe(true);
    ws.send(Buffer.from([5, 8, 1])); // a command of 5 bytes in a frame of 3
    expect(await closed).toBe(3501);
  }, 30_000);
});

describe("centrifuge door — the protocol's ping and pong", () => {
  it("closes a connection that does not answer the server's ping with 3012 no pong", async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/connection/websocket`);
    const lines: string[] = [];
    ws.on("message", (d) => lines.push(...String(d).split("\n")));
    await new Promise((res) => ws.once("open", res));
    ws.send(JSON.stringify({ id: 1, connect: { token: await token("silent") } }));
    const closed = await new Promise<number>((res) => ws.once("close", res));
    expect(closed).toBe(3012);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ id: 1, connect: { ping: 2, pong: true } });
    expect(lines).toContain("{}");
  }, 30_000);
});
