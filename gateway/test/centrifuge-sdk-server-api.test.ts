// The Centrifuge client protocol door (/connection/websocket) with the real JavaScript SDK (`centrifuge` 5.7.4 in
// Node), driven by Centrifugo's server API: `subscribe` into live connections (every connection of the user on
// either worker, or one client; recovery after a reconnect through the token's server-side channels). One
// gateway (2 workers) on a real nats-server for every test.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Centrifuge, type PublicationContext, type ServerSubscribedContext } from "centrifuge";
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
import { httpPublish as publishOverHttp } from "#testkit/ws-client.js";

const API_KEY = "centrifuge-server-api-test-key-0123456789";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let js: JetStreamClient;
const clients: Centrifuge[] = [];
const proxies: TcpProxy[] = [];
const uniq = uniqueNames();

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "centrifuge-server-api-"));
  writeFileSync(join(dir, "namespaces.yaml"), "namespaces:\n  noresume:\n    features: { resume: false }\n");
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 2,
    env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: API_KEY, NAMESPACES_FILE: join(dir, "namespaces.yaml") },
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
/** A connection that may read and publish nothing by itself: what it gets, the server gave it. */
const NOTHING: Claims = { channels: { sub: [], pub: [] } };

const token = (user: string, claims: Claims = NOTHING): Promise<string> => sign(claims as Parameters<typeof sign>[0], { sub: user });
const doorUrl = (port = gw.port): string => `ws://127.0.0.1:${port}/connection/websocket`;

/** A connected SDK client (JSON, or the Protobuf build) that collects its server-side subscriptions and their publications. */
async function client(
  user: string,
  o: { protobuf?: boolean; port?: number; claims?: Claims } = {},
): Promise<{ c: Centrifuge; subscribed: ServerSubscribedContext[]; pubs: PublicationContext[] }> {
  const Sdk = o.protobuf ? (CentrifugeProtobuf as unknown as typeof Centrifuge) : Centrifuge;
  const c = new Sdk(doorUrl(o.port), {
    websocket: WebSocket,
    token: await token(user, o.claims),
    minReconnectDelay: 50,
    maxReconnectDelay: 300,
    timeout: 10_000,
  });
  clients.push(c);
  const subscribed: ServerSubscribedContext[] = [];
  const pubs: PublicationContext[] = [];
  c.on("subscribed", (e) => subscribed.push(e));
  c.on("publication", (p) => pubs.push(p));
  c.connect();
  await c.ready(10_000);
  return { c, subscribed, pubs };
}

/** A fresh Centrifugo channel name `cf:<n>` and its gateway channel `cf.<n>`. */
function channel(base: string, ns = "cf"): { name: string; gw: string } {
  const n = uniq(base);
  return { name: `${ns}:${n}`, gw: `${ns}.${n}` };
}

/** A publish over HTTP with the API key; the message's seq. */
async function httpPublish(gwChannel: string, data: unknown): Promise<number> {
  const r = await publishOverHttp(gw.url, gwChannel, data, { "x-api-key": API_KEY });
  expect(r.status).toBe(201);
  return r.body.seq as number;
}

/** A call of Centrifugo's server API (`POST /api/<method>`). */
async function api(method: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(`${gw.url}/api/${method}`, { method: "POST", body: JSON.stringify(body), headers: { "x-api-key": API_KEY } });
  expect(r.status).toBe(200);
  return (await r.json()) as Record<string, unknown>;
}

/** A publication's tags; none as undefined (the Protobuf build gives an empty map where the JSON one gives none). */
const tagsOf = (p: { tags?: Record<string, string> }): Record<string, string> | undefined => (p.tags && Object.keys(p.tags).length > 0 ? p.tags : undefined);

const dataOf = (p: PublicationContext): unknown => (p.data instanceof Uint8Array ? JSON.parse(new TextDecoder().decode(p.data)) : p.data);

describe("centrifuge door — the server API's subscribe", () => {
  it("subscribes every live connection of the user (JSON and Protobuf, either worker): the SDK's subscribed event with the stream position, then the channel's publications", async () => {
    const ch = channel("live");
    const user = uniq("srv-live");
    const seq0 = await httpPublish(ch.gw, { i: -1 });
    // Three connections of the user: with two workers, at least one worker holds some; another user's stays out.
    const mine = [await client(user), await client(user, { protobuf: true }), await client(user)];
    const other = await client(uniq("srv-other"));
    expect(await api("subscribe", { user, channel: ch.name })).toEqual({ result: {} });
    for (const m of mine) await waitFor(() => m.subscribed.length === 1 || undefined, { what: "the subscribed event" });
    for (const m of mine) {
      expect(m.subscribed[0]).toMatchObject({ channel: ch.name, recoverable: true, positioned: true });
      expect(Number(m.subscribed[0]?.streamPosition?.offset)).toBe(seq0);
      expect(m.subscribed[0]?.streamPosition?.epoch).toEqual(expect.any(String));
    }
    const seq1 = await httpPublish(ch.gw, { i: 0 });
    for (const m of mine) await waitFor(() => m.pubs.length === 1 || undefined, { what: "the publication" });
    for (const m of mine) {
      expect(m.pubs[0]?.channel).toBe(ch.name);
      expect(dataOf(m.pubs[0] as PublicationContext)).toEqual({ i: 0 });
      expect(Number(m.pubs[0]?.offset)).toBe(seq1);
    }
    expect(other.subscribed).toEqual([]);
    expect(other.pubs).toEqual([]);
  }, 40_000);

  it("client names one connection; recover_since sends what followed that position; the same channel again is no second subscription", async () => {
    const ch = channel("one");
    const user = uniq("srv-one");
    const a = await client(user);
    const b = await client(user);
    const seqs = [];
    for (let i = 0; i < 5; i++) seqs.push(await httpPublish(ch.gw, { i }));
    const epoch = ((await api("history", { channel: ch.name, limit: 0 })).result as { epoch: string }).epoch;
    // Recover after the second publication: the last three follow the subscribed event, then live ones.
    const since = { offset: seqs[1], epoch };
    expect(await api("subscribe", { user, channel: ch.name, client: (a.c as unknown as { _client: string })._client, recover_since: since })).toEqual({
      result: {},
    });
    await waitFor(() => a.pubs.length === 3 || undefined, { what: "the recovered publications" });
    expect(Number(a.subscribed[0]?.streamPosition?.offset)).toBe(seqs[1]);
    expect(a.pubs.map(dataOf)).toEqual([{ i: 2 }, { i: 3 }, { i: 4 }]);
    expect(await api("subscribe", { user, channel: ch.name })).toEqual({ result: {} });
    await waitFor(() => b.subscribed.length === 1 || undefined, { what: "the other connection subscribed by the second call" });
    await httpPublish(ch.gw, { i: 5 });
    await waitFor(() => (a.pubs.length === 4 && b.pubs.length === 1) || undefined, { what: "the live publication on both" });
    expect(a.subscribed).toHaveLength(1);
    expect(a.pubs.map(dataOf).at(-1)).toEqual({ i: 5 });
  }, 40_000);

  it("the namespace's switches hold: recover_since where resume is off is refused 108, and no connection is subscribed", async () => {
    const ch = channel("nr", "noresume");
    const user = uniq("srv-nr");
    const a = await client(user);
    const r = await api("subscribe", { user, channel: ch.name, recover_since: { offset: 1, epoch: "x" } });
    expect(r.error).toMatchObject({ code: 108 });
    expect(await api("subscribe", { user, channel: ch.name })).toEqual({ result: {} });
    await waitFor(() => a.subscribed.length === 1 || undefined, { what: "the live subscription the switch allows" });
  }, 30_000);

  it("a reconnect recovers it through the path of the token's server-side channels: the SDK sends its position, what was missed follows", async () => {
    const ch = channel("rec");
    const user = uniq("srv-rec");
    const proxy = await startTcpProxy({ host: "127.0.0.1", port: gw.port });
    proxies.push(proxy);
    const a = await client(user, { port: proxy.port });
    expect(await api("subscribe", { user, channel: ch.name })).toEqual({ result: {} });
    await waitFor(() => a.subscribed.length === 1 || undefined, { what: "the subscribed event" });
    await httpPublish(ch.gw, { i: 0 });
    await waitFor(() => a.pubs.length === 1 || undefined, { what: "the first publication" });
    // The application lists the channel in the connection's next token (Centrifugo's `channels`), as a Centrifugo backend does.
    a.c.setToken(await token(user, { channels: [ch.name] }));
    proxy.refuse(true);
    await waitFor(() => a.c.state !== "connected" || undefined, { what: "the client to see the link down" });
    await publishMany(js, ch.gw, 20, 1);
    proxy.refuse(false);
    await waitFor(() => a.subscribed.length === 2 || undefined, { what: "the subscription again", timeoutMs: 20_000 });
    expect(a.subscribed[1]).toMatchObject({ channel: ch.name, wasRecovering: true, recovered: true });
    await httpPublish(ch.gw, { i: 21 });
    await waitFor(() => a.pubs.length >= 22 || undefined, { what: "the missed and the live publications" });
    expect(a.pubs.map((p) => (dataOf(p) as { i: number }).i)).toEqual(Array.from({ length: 22 }, (_, i) => i));
  }, 40_000);
});

describe("centrifuge door — a refreshed token's info", () => {
  it("a refresh replaces the connection's info: later publications carry it as conn_info, later presence entries too (an entry made before keeps its own, as on /ws)", async () => {
    const ch = channel("info");
    const later = channel("info-later");
    const user = uniq("refresher");
    const ALL: Claims = { channels: { sub: [">"], pub: [">"] } };
    let asked = 0;
    // A token that expires in 3 s: the SDK asks getToken for the next one and sends `refresh` with it.
    const a = new Centrifuge(doorUrl(), {
      websocket: WebSocket,
      token: await sign({ ...ALL, info: { v: 1 } } as Parameters<typeof sign>[0], { sub: user, exp: Math.floor(Date.now() / 1000) + 3 }),
      getToken: async () => {
        asked++;
        return token(user, { ...ALL, info: { v: 2 } });
      },
      minReconnectDelay: 50,
      maxReconnectDelay: 300,
      timeout: 10_000,
    });
    clients.push(a);
    a.connect();
    await a.ready(10_000);
    const aSub = a.newSubscription(ch.name);
    aSub.subscribe();
    await aSub.ready(10_000);
    const b = await client(uniq("reader"), { claims: ALL });
    const bSub = b.c.newSubscription(ch.name);
    const got: PublicationContext[] = [];
    bSub.on("publication", (p) => got.push(p));
    bSub.subscribe();
    await bSub.ready(10_000);
    await a.publish(ch.name, { n: 0 });
    await waitFor(() => got.length === 1 || undefined, { what: "the first publication" });
    expect(got[0]?.info).toMatchObject({ user, connInfo: { v: 1 } });
    await waitFor(() => asked >= 1 || undefined, { what: "the SDK to ask for the next token", timeoutMs: 10_000 });
    // The refresh travels behind getToken: publish until a publication shows it (at most one a poll).
    await waitFor(
      async () => {
        await a.publish(ch.name, { n: got.length });
        await waitFor(() => got.length > 0 || undefined, { what: "a publication" });
        return (got.at(-1)?.info?.connInfo as { v: number } | undefined)?.v === 2 || undefined;
      },
      { what: "a publication with the refreshed info", timeoutMs: 10_000 },
    );
    const infos = got.map((p) => (p.info?.connInfo as { v: number }).v);
    expect(infos.indexOf(2)).toBeGreaterThan(0);
    expect(infos.slice(infos.indexOf(2))).toEqual(infos.slice(infos.indexOf(2)).map(() => 2));
    // Presence: the entry made before the refresh keeps its info; a subscription made after it enters with the new one.
    const before = Object.values((await b.c.presence(ch.name)).clients).find((m) => m.user === user);
    expect(before?.connInfo).toEqual({ v: 1 });

    const aLater = a.newSubscription(later.name);
    aLater.subscribe();
    await aLater.ready(10_000);
    const members = Object.values((await b.c.presence(later.name)).clients);
    expect(members).toEqual([expect.objectContaining({ user, connInfo: { v: 2 } })]);
  }, 40_000);
});

describe("centrifuge door — publication tags", () => {
  const TAGS = { kind: "invoice", región: "señal ✓" };

  it("publish, broadcast and the HTTP batch store tags with the message: live pushes, recovery and history carry them, JSON and Protobuf", async () => {
    const ch = channel("tags");
    const other = channel("tags-b");
    const proxy = await startTcpProxy({ host: "127.0.0.1", port: gw.port });
    proxies.push(proxy);
    const readers = [
      await client(uniq("tagged"), { claims: { channels: { sub: [">"], pub: [] } }, port: proxy.port }),
      await client(uniq("tagged"), { protobuf: true, claims: { channels: { sub: [">"], pub: [] } } }),
    ];
    const subs = readers.map((r) => {
      const sub = r.c.newSubscription(ch.name, { recoverable: true, positioned: true });
      const got: PublicationContext[] = [];
      sub.on("publication", (p) => got.push(p));
      sub.subscribe();
      return { sub, got };
    });
    for (const s of subs) await s.sub.ready(10_000);
    expect(await api("publish", { channel: ch.name, data: { n: 1 }, tags: TAGS })).toMatchObject({ result: { offset: expect.any(Number) } });
    expect(await api("broadcast", { channels: [ch.name, other.name], data: { n: 2 }, tags: { via: "broadcast" } })).toMatchObject({
      result: { responses: [{ result: {} }, { result: {} }] },
    });
    const batch = await fetch(`${gw.url}/v1/publish`, {
      method: "POST",
      body: JSON.stringify([
        { channel: ch.gw, data: { n: 3 }, tags: { via: "batch" } },
        { channel: ch.gw, data: { n: 4 } },
      ]),
      headers: { "content-type": "application/json", "x-api-key": API_KEY },
    });
    expect(batch.status).toBe(200);
    for (const s of subs) await waitFor(() => s.got.length === 4 || undefined, { what: "four publications" });
    const expected = [TAGS, { via: "broadcast" }, { via: "batch" }, undefined];
    for (const s of subs) expect(s.got.map(tagsOf)).toEqual(expected);
    // Recovery (the JSON client, behind the proxy): the missed publications come with their tags.
    const [json] = subs;
    proxy.refuse(true);
    await waitFor(() => readers[0]?.c.state !== "connected" || undefined, { what: "the link down" });
    await api("publish", { channel: ch.name, data: { n: 5 }, tags: { missed: "yes" } });
    proxy.refuse(false);
    await waitFor(() => (json?.got.length ?? 0) >= 5 || undefined, { what: "the missed publication recovered", timeoutMs: 20_000 });
    expect(json?.got[4]).toMatchObject({ data: { n: 5 }, tags: { missed: "yes" } });
    // History: the door's `history` (both formats) and the server API's.
    for (const s of subs) expect((await s.sub.history({ limit: 10 })).publications.map(tagsOf)).toEqual([...expected, { missed: "yes" }]);
    const h = (await api("history", { channel: ch.name, limit: 10 })).result as { publications: { tags?: unknown }[] };
    expect(h.publications.map((p) => p.tags)).toEqual([...expected, { missed: "yes" }]);
  }, 40_000);

  it("tags are bounded: more than 32 keys, a value that is not a string or more than 1,024 bytes are refused with 107 naming the bound", async () => {
    const ch = channel("tags-bound");
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, "v"]));
    expect(await api("publish", { channel: ch.name, data: 1, tags: many })).toMatchObject({
      error: { code: 107, message: expect.stringMatching(/at most 32 keys/) },
    });
    expect(await api("publish", { channel: ch.name, data: 1, tags: { a: 1 } })).toMatchObject({
      error: { code: 107, message: expect.stringMatching(/strings/) },
    });
    expect(await api("publish", { channel: ch.name, data: 1, tags: { a: "x".repeat(1_100) } })).toMatchObject({
      error: { code: 107, message: expect.stringMatching(/1024 bytes/) },
    });
  }, 20_000);
});
