// The publisher's `info` in the Centrifuge door's publications, seen by the real JavaScript SDK (`centrifuge`
// 5.7.4 in Node) over JSON and Protobuf against the real gateway (dist, 2 workers) on a real nats-server: a
// client publishing (on this door or on /ws) gives its subscribers' `publication` events its ClientInfo (user,
// client, the connection token's `info`, the subscription token's `info`), live, in history and in recovery;
// an HTTP publish has none.
import { Centrifuge, type ClientInfo, type PublicationContext, type Subscription, type SubscribedContext } from "centrifuge";
import { Centrifuge as CentrifugeProtobuf } from "centrifuge/build/protobuf";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { AUDIENCE, connect, ISSUER, SECRET, sign } from "#testkit/auth.js";
import { startTcpProxy, type TcpProxy } from "#testkit/tcp-proxy.js";
import { uniqueNames } from "#testkit/clients.js";
import type { TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients: Centrifuge[] = [];
const sockets: TestClient[] = [];
const proxies: TcpProxy[] = [];
const uniq = uniqueNames();

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE } });
});
afterAll(async () => {
  for (const c of clients) c.disconnect();
  for (const s of sockets) s.close();
  for (const p of proxies) await p.close();
  await gw?.stop();
  await nats?.stop();
});

type Claims = Record<string, unknown>;
const ALL: Claims = { channels: { sub: [">"], pub: [">"] } };

type Format = { name: string; Sdk: typeof Centrifuge; data: (v: unknown) => unknown; value: (d: unknown) => unknown };
const FORMATS: readonly Format[] = [
  { name: "JSON", Sdk: Centrifuge, data: (v) => v, value: (d) => d },
  {
    name: "Protobuf",
    Sdk: CentrifugeProtobuf as unknown as typeof Centrifuge,
    data: (v) => new TextEncoder().encode(JSON.stringify(v)),
    // An absent bytes field reads as empty bytes in the Protobuf build.
    value: (d) => (d === undefined || (d as Uint8Array).length === 0 ? undefined : (JSON.parse(new TextDecoder().decode(d as Uint8Array)) as unknown)),
  },
];

async function sdkClient(f: Format, user: string, claims: Claims, url = `ws://127.0.0.1:${gw.port}/connection/websocket`): Promise<Centrifuge> {
  const c = new f.Sdk(url, { websocket: WebSocket, token: await sign(claims, { sub: user }), minReconnectDelay: 50, maxReconnectDelay: 300, timeout: 10_000 });
  clients.push(c);
  c.connect();
  await c.ready(10_000);
  return c;
}

function collect(sub: Subscription): { pubs: PublicationContext[]; subscribed: SubscribedContext[] } {
  const out = { pubs: [] as PublicationContext[], subscribed: [] as SubscribedContext[] };
  sub.on("publication", (p) => out.pubs.push(p));
  sub.on("subscribed", (s) => out.subscribed.push(s));
  return out;
}

async function httpPublish(gwChannel: string, data: unknown): Promise<void> {
  const r = await fetch(`${gw.url}/v1/publish/${encodeURIComponent(gwChannel)}`, {
    method: "POST",
    body: JSON.stringify(data),
    headers: { "content-type": "application/json", authorization: `Bearer ${await sign(ALL, { sub: "backend" })}` },
  });
  expect(r.ok).toBe(true);
}

describe.each(FORMATS)("centrifuge door — the publisher's info over $name", (f) => {
  /** A publication's info with its JSON infos read back (the Protobuf build gives them as bytes). */
  const infoOf = (p: { info?: ClientInfo }) =>
    p.info === undefined ? undefined : { user: p.info.user, client: p.info.client, connInfo: f.value(p.info.connInfo), chanInfo: f.value(p.info.chanInfo) };
  const indexes = (pubs: readonly { data: unknown }[]): number[] => pubs.map((p) => (f.value(p.data) as { i: number }).i);

  it("a client's publication carries its user, client, conn_info and chan_info live, in history and in recovery; HTTP's and /ws's carry what they have", async () => {
    const n = uniq("info");
    const ch = { name: `cf:${n}`, gw: `cf.${n}` };
    const proxy = await startTcpProxy({ host: "127.0.0.1", port: gw.port });
    proxies.push(proxy);
    const reader = await sdkClient(f, "reader", ALL, `ws://127.0.0.1:${proxy.port}/connection/websocket`);
    const rsub = reader.newSubscription(ch.name, { recoverable: true, positioned: true });
    const got = collect(rsub);
    rsub.subscribe();
    await rsub.ready(10_000);

    const writer = await sdkClient(f, "writer", { ...ALL, info: { name: "Writer" } });
    // A subscription token's `info`: the chan_info of what the writer publishes on this channel.
    const wsub = writer.newSubscription(ch.name, { token: await sign({ channel: ch.name, info: { role: "host" } } as Claims, { sub: "writer" }) });
    wsub.subscribe();
    await wsub.ready(10_000);
    const writerClient = (await wsub.presence()).clients;
    const writerId = Object.values(writerClient).find((c) => c.user === "writer")?.client;
    const expected = { user: "writer", client: writerId, connInfo: { name: "Writer" }, chanInfo: { role: "host" } };
    expect(writerId).toEqual(expect.any(String));

    await writer.publish(ch.name, f.data({ i: 0 }));
    await httpPublish(ch.gw, { i: 1 });
    await waitFor(() => got.pubs.length >= 2 || undefined, { what: "two live publications" });
    expect(indexes(got.pubs)).toEqual([0, 1]);
    expect(infoOf(got.pubs[0] as PublicationContext)).toEqual(expected);
    expect(got.pubs[1]?.info).toBeUndefined();

    // Recovery: missed while the reader's link is down, then recovered from the stream.
    proxy.refuse(true);
    await waitFor(() => reader.state !== "connected" || undefined, { what: "the reader to see the link down" });
    await writer.publish(ch.name, f.data({ i: 2 }));
    await httpPublish(ch.gw, { i: 3 });
    proxy.refuse(false);
    await waitFor(() => got.subscribed.length === 2 || undefined, { what: "the resubscribe", timeoutMs: 20_000 });
    expect(got.subscribed[1]).toMatchObject({ wasRecovering: true, recovered: true });
    await waitFor(() => got.pubs.length >= 4 || undefined, { what: "two recovered publications" });
    expect(indexes(got.pubs)).toEqual([0, 1, 2, 3]);
    expect(infoOf(got.pubs[2] as PublicationContext)).toEqual(expected);
    expect(got.pubs[3]?.info).toBeUndefined();

    // A /ws client's publish: its user and client id; no token `info` claim on that door, no subscription token.
    const ws = await connect(gw.wsUrl, { headers: { authorization: `Bearer ${await sign(ALL, { sub: "native" })}` } });
    sockets.push(ws);
    expect(await ws.request({ op: "pub", channel: ch.gw, data: { i: 4 } })).toMatchObject({ op: "ok" });
    await waitFor(() => got.pubs.length >= 5 || undefined, { what: "the /ws publication" });
    expect(infoOf(got.pubs[4] as PublicationContext)).toEqual({ user: "native", client: expect.any(String), connInfo: undefined, chanInfo: undefined });
    // A batch publish on /ws: each item carries it too.
    expect(await ws.request({ op: "pub", batch: [{ channel: ch.gw, data: { i: 5 } }] })).toMatchObject({ op: "ok" });
    await waitFor(() => got.pubs.length >= 6 || undefined, { what: "the /ws batch publication" });
    expect(infoOf(got.pubs[5] as PublicationContext)).toEqual(infoOf(got.pubs[4] as PublicationContext));

    // History: the same infos, read back from the stream.
    const h = await reader.history(ch.name, { limit: 10 });
    expect(indexes(h.publications)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(h.publications.map((p) => infoOf(p)?.user)).toEqual(["writer", undefined, "writer", undefined, "native", "native"]);
    expect(infoOf(h.publications[0] as { info?: ClientInfo })).toEqual(expected);
  }, 60_000);
});
