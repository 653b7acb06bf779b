// Batch publish through both doors (POST /v1/publish, WebSocket pub with batch) against a real gateway and
// nats-server: one result per item in order, stored in item order, each item authorized on its own, bounds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { httpPublish } from "#testkit/ws-client.js";
import { AUDIENCE, connect, ISSUER, SECRET, sign } from "#testkit/auth.js";

const API_KEY = "batch-api-key-0123456789";
const MAX_ITEMS = 200;
let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool();
const uniq = uniqueNames();

/** The gateways' settings: JWT, one API key, small batches. */
const BATCH_ENV = { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: API_KEY, PUBLISH_BATCH_MAX_ITEMS: String(MAX_ITEMS) };

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, env: { ...BATCH_ENV, PUBLISH_BATCH_MAX_BYTES: "32KiB" } });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
});

type Results = { results: ({ seq: number; duplicate: boolean } | { error: string; message: string; temporary: boolean })[] };

const post = (body: string, headers: Record<string, string>) => postTo(gw, body, headers);

async function postTo(g: GatewayHandle, body: string, headers: Record<string, string>): Promise<{ status: number; json: Results & Record<string, unknown> }> {
  const r = await fetch(`${g.url}/v1/publish`, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
  return { status: r.status, json: (await r.json()) as Results & Record<string, unknown> };
}

const seqsOf = (r: Results) => r.results.map((x) => ("seq" in x ? x.seq : -1));
const increasing = (xs: number[]) => xs.every((x, i) => i === 0 || x > xs[i - 1]!);

describe("batch publish — HTTP", () => {
  it("a JSON array of 100 is stored in item order and delivered in order, one result per item", async () => {
    const channel = uniq("batch.http");
    const t = await sign({ channels: { sub: [channel] } }, { sub: uniq("watcher") });
    const sub = clients.track(await connect(gw.wsUrl, { headers: { authorization: `Bearer ${t}` } }));
    await sub.sub(channel);
    const items = Array.from({ length: 100 }, (_, i) => ({ channel, data: { i } }));
    const r = await post(JSON.stringify(items), { "x-api-key": API_KEY });
    expect(r.status).toBe(200);
    expect(r.json.results).toHaveLength(100);
    const seqs = seqsOf(r.json);
    expect(increasing(seqs)).toBe(true);
    const got = await sub.waitForMsgs(100);
    expect(got.map((m) => (m.data as { i: number }).i)).toEqual(items.map((x) => x.data.i));
    expect(got.map((m) => m.seq)).toEqual(seqs);
  });

  it("NDJSON works the same; msgId dedupes inside a batch", async () => {
    const channel = uniq("batch.nd");
    const lines = [
      { channel, data: 1, msgId: `${channel}-a` },
      { channel, data: 2 },
      { channel, data: 1, msgId: `${channel}-a` },
    ];
    const r = await post(lines.map((l) => JSON.stringify(l)).join("\n") + "\n", { "x-api-key": API_KEY, "content-type": "application/x-ndjson" });
    expect(r.status).toBe(200);
    expect(r.json.results).toEqual([
      { seq: expect.any(Number), duplicate: false },
      { seq: expect.any(Number), duplicate: false },
      { seq: (r.json.results[0] as { seq: number }).seq, duplicate: true },
    ]);
  });

  it("each item is authorized on its own: a bad or forbidden item is answered in its place, the others are stored", async () => {
    const user = uniq("pub");
    const t = await sign({ channels: { pub: ["allowed.>"] } }, { sub: user });
    const items = [
      { channel: "allowed.a", data: 1 },
      { channel: "denied.a", data: 2 },
      { channel: "bad..name", data: 3 },
      { channel: "allowed.b" },
      { channel: "allowed.c", data: 5 },
    ];
    const r = await post(JSON.stringify(items), { authorization: `Bearer ${t}` });
    expect(r.status).toBe(200);
    expect(r.json.results).toEqual([
      { seq: expect.any(Number), duplicate: false },
      { error: "forbidden", message: expect.stringContaining("denied.a"), temporary: false },
      { error: "bad_channel", message: expect.any(String), temporary: false },
      { error: "bad_request", message: "data is missing", temporary: false },
      { seq: expect.any(Number), duplicate: false },
    ]);
    // no credentials at all: the whole request is refused before any item
    expect((await post(JSON.stringify(items), {})).status).toBe(401);
  });

  it("credentials are checked before the body is read and parsed: no or a bad key is 401 whatever the body", async () => {
    const many = JSON.stringify(Array.from({ length: MAX_ITEMS }, (_, i) => ({ channel: "b.x", data: i })));
    const big = JSON.stringify(Array.from({ length: 10 }, () => ({ channel: "b.x", data: "x".repeat(4_000) })));
    for (const body of ["[{", big, many, "{}", `[${"1,".repeat(1 << 19)}1]`])
      for (const headers of [{}, { "x-api-key": "not-the-key-0123456789" }, { authorization: "Bearer not.a.token" }] as Record<string, string>[])
        expect(await post(body, headers)).toMatchObject({ status: 401, json: { error: "unauthorized" } });
    // a single publish too: its body (over MAX_PAYLOAD_BYTES here, or not JSON) is not looked at
    for (const body of ["x".repeat(100_000), "{"]) {
      const r = await fetch(`${gw.url}/v1/publish/b.x`, { method: "POST", body, headers: { "content-type": "application/json" } });
      expect(r.status).toBe(401);
    }
  });

  it("bounds: more items than PUBLISH_BATCH_MAX_ITEMS is 400, a body over PUBLISH_BATCH_MAX_BYTES is 413, not a list is 400", async () => {
    const many = Array.from({ length: MAX_ITEMS + 1 }, () => ({ channel: "b.x", data: 0 }));
    expect(await post(JSON.stringify(many), { "x-api-key": API_KEY })).toMatchObject({ status: 400, json: { error: "bad_request" } });
    const big = Array.from({ length: 10 }, () => ({ channel: "b.x", data: "x".repeat(4_000) }));
    expect(await post(JSON.stringify(big), { "x-api-key": API_KEY })).toMatchObject({ status: 413, json: { error: "payload_too_large" } });
    expect(await post(JSON.stringify({ channel: "b.x", data: 1 }), { "x-api-key": API_KEY })).toMatchObject({ status: 400, json: { error: "bad_request" } });
    expect(await post("[{", { "x-api-key": API_KEY })).toMatchObject({ status: 400, json: { error: "bad_json" } });
    expect(await post('[{"channel":"b.x","data":{"n":1e999}}]', { "x-api-key": API_KEY })).toMatchObject({ status: 400, json: { error: "bad_request" } });
  });
});

describe("HTTP publish rate — per user and per API key, counted in messages", () => {
  // One worker (the allowances are per worker): users 5 messages/s, 50 at once; the API key (a backend) far more.
  let limited: GatewayHandle;
  beforeAll(async () => {
    const rates = { PUBLISH_RATE: "5", PUBLISH_BURST: "50", PUBLISH_RATE_PER_KEY: "1000000" };
    limited = await startGateway({ natsUrl: nats.url, workers: 1, env: { ...BATCH_ENV, ...rates } });
  });
  afterAll(() => limited?.stop());

  it("a user's batch counts each item: past PUBLISH_BURST the next request is 429 with Retry-After; another user and the API key go on", async () => {
    const [ann, ben] = [uniq("ann"), uniq("ben")];
    const perms = { channels: { pub: ["rate.>"] } };
    const [ta, tb] = [await sign(perms, { sub: ann }), await sign(perms, { sub: ben })];
    const items = (n: number) => JSON.stringify(Array.from({ length: n }, (_, i) => ({ channel: `rate.${ann}`, data: i })));
    // 60 messages: let in (the bucket had tokens), and the 10 over the burst are owed
    expect((await postTo(limited, items(60), { authorization: `Bearer ${ta}` })).status).toBe(200);
    const again = await fetch(`${limited.url}/v1/publish`, {
      method: "POST",
      body: items(1),
      headers: { "content-type": "application/json", authorization: `Bearer ${ta}` },
    });
    expect(again.status).toBe(429);
    expect(Number(again.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await again.json()).toMatchObject({ error: "rate_limited", temporary: true, message: expect.stringContaining("by this user") });
    const single = await httpPublish(limited.url, `rate.${ann}`, 1, { authorization: `Bearer ${ta}` });
    expect(single).toMatchObject({ status: 429, body: { error: "rate_limited" } });
    // the same address, another user: their own allowance
    expect((await httpPublish(limited.url, `rate.${ben}`, 1, { authorization: `Bearer ${tb}` })).status).toBe(201);
    // the API key counts against PUBLISH_RATE_PER_KEY, not a user's
    for (let i = 0; i < 3; i++) expect((await postTo(limited, items(MAX_ITEMS), { "x-api-key": API_KEY })).status).toBe(200);
    // stored: ann's 60 and the key's, none of the refused requests'
    const stored = await (await fetch(`${limited.url}/v1/channels/rate.${ann}/messages?limit=1000`, { headers: { "x-api-key": API_KEY } })).json();
    expect((stored as { messages: unknown[] }).messages).toHaveLength(60 + 3 * MAX_ITEMS);
  });
});

describe("channel names — a lone surrogate is refused at every door", () => {
  it("WS sub and pub, and a batch item, with a lone surrogate answer bad_channel (it would share U+FFFD's subject)", async () => {
    const t = await sign({ channels: { sub: [">"], pub: [">"] } }, { sub: uniq("lone") });
    const c = clients.track(await connect(gw.wsUrl, { headers: { authorization: `Bearer ${t}` } }));
    expect(await c.request({ op: "sub", channel: "lone.\uD800" })).toMatchObject({ op: "err", code: "bad_channel" });
    expect(await c.request({ op: "pub", channel: "lone.\uD800", data: 1 })).toMatchObject({ op: "err", code: "bad_channel" });
    const r = await post(
      JSON.stringify([
        { channel: "lone.\uD800", data: 1 },
        { channel: "lone.\uFFFD", data: 2 },
      ]),
      { "x-api-key": API_KEY },
    );
    expect(r.json.results).toEqual([
      { error: "bad_channel", message: expect.stringContaining("well-formed"), temporary: false },
      { seq: expect.any(Number), duplicate: false },
    ]);
  });
});

describe("channel names — C1 controls, bidi overrides and invisible characters are refused at every door", () => {
  it("room.\\u0085x, a right-to-left override and a zero width space are bad_channel for WS, SSE, history, HTTP publish and batch items", async () => {
    const t = await sign({ channels: { sub: [">"], pub: [">"] } }, { sub: uniq("unseen") });
    const c = clients.track(await connect(gw.wsUrl, { headers: { authorization: `Bearer ${t}` } }));
    const key = { "x-api-key": API_KEY };
    for (const channel of ["room.\u0085x", "room.ab\u202ecd", "room.\u2066x\u2069", "room.a\u200bb"]) {
      expect(await c.request({ op: "sub", channel })).toMatchObject({ op: "err", code: "bad_channel", message: expect.stringContaining("U+") });
      expect(await c.request({ op: "pub", channel, data: 1 })).toMatchObject({ op: "err", code: "bad_channel" });
      const enc = encodeURIComponent(channel);
      const single = await fetch(`${gw.url}/v1/publish/${enc}`, { method: "POST", body: "1", headers: { "content-type": "application/json", ...key } });
      expect(single.status).toBe(400);
      expect(await single.json()).toMatchObject({ error: "bad_channel" });
      expect((await post(JSON.stringify([{ channel, data: 1 }]), key)).json.results).toEqual([
        { error: "bad_channel", message: expect.stringContaining("invisible or control character"), temporary: false },
      ]);
      expect((await fetch(`${gw.url}/v1/channels/${enc}/messages`, { headers: key })).status).toBe(400);
      expect((await fetch(`${gw.url}/v1/channels/${enc}/events`, { headers: key })).status).toBe(400);
    }
    // nothing of them was stored
    expect(await (await fetch(`${gw.url}/v1/channels/room.%3E/messages?last_per_subject=1`, { headers: key })).json()).toMatchObject({ messages: [] });
  });
});

describe("single HTTP publish — the body's bytes", () => {
  it("one line of JSON is stored as sent; JSON over several lines is stored compact on one line; not JSON is 400", async () => {
    const channel = uniq("body");
    const send = (body: string) =>
      fetch(`${gw.url}/v1/publish/${channel}`, { method: "POST", body, headers: { "x-api-key": API_KEY, "content-type": "application/json" } });
    expect((await send('{"a": 1,  "b": [1, 2]}')).status).toBe(201);
    expect((await send('{\n  "a": 2\n}')).status).toBe(201);
    expect((await send('{"a": 3')).status).toBe(400);
    const raw = await (await fetch(`${gw.url}/v1/channels/${channel}/messages`, { headers: { "x-api-key": API_KEY } })).text();
    expect(raw).toContain('"data":{"a": 1,  "b": [1, 2]}');
    expect(raw).toContain('"data":{"a":2}');
    expect((JSON.parse(raw) as { messages: unknown[] }).messages).toHaveLength(2);
  });
});

describe("batch publish — WebSocket", () => {
  it("pub with batch: stored in order, one result per item, items authorized on their own, bounded", async () => {
    const channel = uniq("batch.ws");
    const t = await sign({ channels: { sub: [channel], pub: [channel] } }, { sub: uniq("wsuser") });
    const c = clients.track(await connect(gw.wsUrl, { headers: { authorization: `Bearer ${t}` } }));
    await c.sub(channel);
    const batch = [...Array.from({ length: 50 }, (_, i) => ({ channel, data: { i } })), { channel: "other.x", data: 0 }];
    const r = await c.request({ op: "pub", batch });
    expect(r).toMatchObject({ op: "ok" });
    const results = (r as unknown as Results).results;
    expect(results).toHaveLength(51);
    expect(results[50]).toMatchObject({ error: "forbidden", temporary: false });
    const seqs = seqsOf({ results: results.slice(0, 50) });
    expect(increasing(seqs)).toBe(true);
    const got = await c.waitForMsgs(50);
    expect(got.map((m) => m.seq)).toEqual(seqs);
    const over = Array.from({ length: MAX_ITEMS + 1 }, () => ({ channel, data: 0 }));
    expect(await c.request({ op: "pub", batch: over })).toMatchObject({ op: "err", code: "bad_request" });
    expect(await c.request({ op: "pub", batch: [] })).toMatchObject({ op: "err", code: "bad_request" });
    expect(await c.request({ op: "pub", batch: [{ channel, data: 1 }], channel })).toMatchObject({ op: "err", code: "bad_request" });
  });
});
