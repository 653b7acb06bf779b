// Binary payloads end to end (issue 36) against a real gateway and nats-server: bytes published through each
// door (HTTP octet-stream, a MessagePack `pub` with a bin, a JSON `pub` with base64, NATS directly with the
// Fanout-Content-Type header) are stored with their content type and delivered as bytes to MessagePack
// sockets, as base64 with the type named to JSON sockets, SSE and history; a resume reads them from the stream.
import { headers as natsHeaders, connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { SseReader } from "#testkit/sse-client.js";
import { httpPublish, type MsgFrame } from "#testkit/ws-client.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
const clients = new ClientPool(() => gw.wsUrl);
const uniq = uniqueNames();
const readers: SseReader[] = [];

/** Bytes that are neither JSON nor UTF-8, and bytes that happen to be JSON text (`{}`): both stay bytes. */
const BYTES: Uint8Array<ArrayBuffer> = Uint8Array.from([0, 1, 2, 0xfe, 0xff, 0x7b, 0x7d, 10, 13]);
const JSONISH = new TextEncoder().encode('{"a":1}');

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, args: ["--feed-linger", "100ms"] });
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  for (const r of readers) r.close();
  clients.closeAll();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

async function postBytes(
  channel: string,
  body: Uint8Array<ArrayBuffer>,
  contentType = "application/octet-stream",
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${gw.url}/v1/publish/${encodeURIComponent(channel)}`, { method: "POST", body, headers: { "content-type": contentType } });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/** A JSON frame's binary payload: base64 with its type named. */
function expectBase64(m: Record<string, unknown> | undefined, bytes: Uint8Array, type = "application/octet-stream"): void {
  expect(m).toMatchObject({ enc: "base64", type });
  expect(Buffer.from(m!.data as string, "base64")).toEqual(Buffer.from(bytes));
}

/** A MessagePack frame's binary payload: the bytes as a bin, with its type. */
function expectBin(m: Record<string, unknown> | undefined, bytes: Uint8Array, type = "application/octet-stream"): void {
  expect(m).toMatchObject({ enc: "binary", type });
  expect(m!.data).toBeInstanceOf(Uint8Array);
  expect(Buffer.from(m!.data as Uint8Array)).toEqual(Buffer.from(bytes));
}

const history = async (ch: string) =>
  ((await (await fetch(`${gw.url}/v1/channels/${encodeURIComponent(ch)}/messages?from_seq=1`)).json()) as { messages: Record<string, unknown>[] }).messages;

/** A JSON and a MessagePack socket subscribed to `ch`. */
async function subscribers(ch: string) {
  const j = await clients.open();
  const b = await clients.open({ msgpack: true });
  await j.sub(ch);
  await b.sub(ch);
  return { j, b };
}

describe("binary payloads — every door in, every codec out", () => {
  it("binary — HTTP octet-stream: WS JSON gets base64, WS msgpack bytes, SSE base64, history base64; JSON beside it is unchanged", async () => {
    const ch = uniq("bin.http.");
    const { j, b } = await subscribers(ch);
    const sse = await SseReader.open(`${gw.url}/v1/channels/${encodeURIComponent(ch)}/events`);
    readers.push(sse);
    const r1 = await postBytes(ch, BYTES);
    expect(r1.status).toBe(201);
    const r2 = await postBytes(ch, JSONISH);
    await httpPublish(gw.url, ch, { n: 3 });
    const [jm1, jm2, jm3] = await j.waitForMsgs(3);
    expect(jm1!.seq).toBe(r1.body.seq);
    expectBase64(jm1, BYTES);
    expectBase64(jm2, JSONISH);
    expect(jm3!.data).toEqual({ n: 3 });
    expect(jm3).not.toHaveProperty("type");
    const [bm1, bm2, bm3] = await b.waitForMsgs(3);
    expectBin(bm1, BYTES);
    expectBin(bm2, JSONISH);
    expect(bm3).not.toHaveProperty("enc");
    expect(JSON.parse(Buffer.from(bm3!.data as Uint8Array).toString())).toEqual({ n: 3 });
    const seqs = await sse.waitForSeqs(3);
    expect(seqs).toEqual([r1.body.seq, r2.body.seq, jm3!.seq]);
    const events = sse.events.filter((e) => e.event === "message").map((e) => JSON.parse(e.data) as Record<string, unknown>);
    expectBase64(events[0], BYTES);
    expectBase64(events[1], JSONISH);
    const h = await history(ch);
    expectBase64(h[0], BYTES);
    expectBase64(h[1], JSONISH);
    expect(h[2]).toMatchObject({ data: { n: 3 } });
  });

  it("binary — a MessagePack pub with a bin (and a type), a batch item, and a JSON pub with base64 are stored as bytes", async () => {
    const ch = uniq("bin.ws.");
    const j = await clients.open();
    await j.sub(ch);
    const b = await clients.open({ msgpack: true });
    const ok = await b.request({ op: "pub", channel: ch, data: BYTES, type: "image/png" });
    expect(ok).toMatchObject({ op: "ok", duplicate: false });
    const batch = await b.request({ op: "pub", batch: [{ channel: ch, data: JSONISH }] });
    expect((batch.results as unknown[])[0]).toMatchObject({ duplicate: false });
    const viaJson = await j.request({ op: "pub", channel: ch, enc: "base64", data: Buffer.from(BYTES).toString("base64"), type: "application/x-thing" });
    expect(viaJson).toMatchObject({ op: "ok" });
    const [m1, m2, m3] = await j.waitForMsgs(3);
    expectBase64(m1, BYTES, "image/png");
    expectBase64(m2, JSONISH);
    expectBase64(m3, BYTES, "application/x-thing");
    // Refusals: a type without bytes, bytes as JSON's type, a type that is no media type, bad base64.
    const errs = await Promise.all([
      j.request({ op: "pub", channel: ch, data: 1, type: "image/png" }),
      b.request({ op: "pub", channel: ch, data: BYTES, type: "application/json" }),
      b.request({ op: "pub", channel: ch, data: BYTES, type: "x\r\nNats-Msg-Id: 1" }),
      j.request({ op: "pub", channel: ch, enc: "base64", data: "no!" }),
    ]);
    for (const e of errs) expect(e).toMatchObject({ op: "err", code: "bad_request" });
  });

  it("binary — NATS directly with Fanout-Content-Type: bytes to both codecs; without the header, today's content sniffing", async () => {
    const ch = uniq("bin.nats.");
    const { j, b } = await subscribers(ch);
    const h = natsHeaders();
    h.set("Fanout-Content-Type", "Application/Protobuf");
    nc.publish(`ev.${ch}`, JSONISH, { headers: h });
    const json = natsHeaders();
    json.set("Fanout-Content-Type", "application/json");
    nc.publish(`ev.${ch}`, JSONISH, { headers: json });
    await nc.flush();
    const [jm1, jm2] = await j.waitForMsgs(2);
    expectBase64(jm1, JSONISH, "application/protobuf");
    // application/json is the same as no type: the JSON path.
    expect(jm2!.data).toEqual({ a: 1 });
    expect(jm2).not.toHaveProperty("type");
    const [bm1] = await b.waitForMsgs(2);
    expectBin(bm1, JSONISH, "application/protobuf");
  });

  it("binary — a NATS publisher's Fanout-Content-Type that is not a media type (3,000 characters, a space) goes as application/octet-stream", async () => {
    const ch = uniq("bin.badtype.");
    const { j, b } = await subscribers(ch);
    for (const bad of [`application/${"x".repeat(3_000)}`, "text/plain; charset=utf-8"]) {
      const h = natsHeaders();
      h.set("Fanout-Content-Type", bad);
      nc.publish(`ev.${ch}`, BYTES, { headers: h });
    }
    await nc.flush();
    for (const m of await j.waitForMsgs(2)) expectBase64(m, BYTES, "application/octet-stream");
    for (const m of await b.waitForMsgs(2)) expectBin(m, BYTES, "application/octet-stream");
  });

  it("binary — a resume across binary messages reads them from the stream with their type (JSON and msgpack)", async () => {
    const ch = uniq("bin.resume.");
    const first = await httpPublish(gw.url, ch, { i: 1 });
    await postBytes(ch, BYTES);
    await httpPublish(gw.url, ch, { i: 3 });
    const from = { seq: first.body.seq as number };
    const j = await clients.open();
    await j.sub(ch, { from });
    const got = await j.waitForMsgs(3);
    expect(got[0]!.data).toEqual({ i: 1 });
    expectBase64(got[1], BYTES);
    expect(got[2]!.data).toEqual({ i: 3 });
    const b = await clients.open({ msgpack: true });
    await b.sub(ch, { from });
    const bg: MsgFrame[] = await b.waitForMsgs(3);
    expectBin(bg[1], BYTES);
    expect(bg[2]).not.toHaveProperty("enc");
  });

  it("binary — a durable subscription's deliveries carry the type (JSON base64, msgpack bytes)", async () => {
    const ch = uniq("bin.durable.");
    const j = await clients.open();
    const b = await clients.open({ msgpack: true });
    expect(await j.sub(ch, { durable: uniq("dj"), ack: true })).toMatchObject({ op: "ok" });
    expect(await b.sub(ch, { durable: uniq("db"), ack: true })).toMatchObject({ op: "ok" });
    await postBytes(ch, BYTES);
    const [jm] = await j.waitForMsgs(1);
    expectBase64(jm, BYTES);
    expect(jm).toHaveProperty("durable");
    const [bm] = await b.waitForMsgs(1);
    expectBin(bm, BYTES);
  });

  it("binary — a delta subscription gets a binary payload full (never a delta), even when its bytes are JSON close to the last message", async () => {
    const ch = uniq("bin.delta.");
    const doc = (n: number) => JSON.stringify({ text: "x".repeat(2_000), n });
    const j = await clients.open();
    expect(await j.sub(ch, { delta: "fossil" })).toMatchObject({ op: "ok", delta: "fossil" });
    await httpPublish(gw.url, ch, JSON.parse(doc(1)));
    const typed = new TextEncoder().encode(doc(2));
    await postBytes(ch, typed);
    await httpPublish(gw.url, ch, JSON.parse(doc(3)));
    const [, m2, m3] = await j.waitForMsgs(3);
    expect(m2).not.toHaveProperty("delta");
    expectBase64(m2, typed);
    // The binary payload is the base of the next message's delta, as any full message is.
    expect(m3).toMatchObject({ delta: true, base: m2!.seq });
  });

  it("binary — HTTP refuses other content types (415) and counts bytes against MAX_PAYLOAD_BYTES", async () => {
    const ch = uniq("bin.limits.");
    expect((await postBytes(ch, BYTES, "text/plain")).status).toBe(415);
    const big = await postBytes(ch, new Uint8Array(2 * 1024 * 1024));
    expect(big.status).toBe(413);
  });
});
