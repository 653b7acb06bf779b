// Per-channel Fossil deltas (PROTOCOL.md "Deltas") against a real gateway and nats-server: the first message
// of each channel full, then deltas the SDK's bases apply to the published documents; fewer bytes on the
// wire; full messages after a resume and on a wildcard's first message per channel; full when the delta is
// not smaller or would cost the encoder past its work bound; the delta made once per worker for every subscriber (counted by the gateway's metric); the
// same in MessagePack; refused where it cannot be served.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { applied, kinds, scoreboards, slowDeltaPair } from "#testkit/deltas.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { scrape } from "#testkit/metrics.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { SseReader } from "#testkit/sse-client.js";
import { waitFor } from "#testkit/wait.js";
import { httpPublish } from "#testkit/ws-client.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool(() => gw.wsUrl);
const uniq = uniqueNames();

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, args: ["--feed-linger", "100ms"] });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
});

const documents = (n: number): unknown[] => scoreboards(n);

async function publishAll(channel: string, docs: readonly unknown[]): Promise<number[]> {
  const seqs: number[] = [];
  for (const d of docs) seqs.push((await httpPublish(gw.url, channel, d)).body.seq as number);
  return seqs;
}

const metric = async (name: string, labels?: Record<string, string>): Promise<number> => (await scrape(gw.metricsUrl)).value(name, labels);

describe("deltas — per-channel Fossil deltas on a real gateway", () => {
  it("deltas — full first, then deltas the SDK applies to the published documents; the bytes on the wire shrink", async () => {
    const ch = uniq("dl.doc.");
    const delta = await clients.open();
    const plain = await clients.open();
    expect(await delta.sub(ch, { delta: "fossil" })).toMatchObject({ op: "ok", delta: "fossil" });
    expect(await plain.sub(ch)).not.toHaveProperty("delta");
    const docs = documents(20);
    await publishAll(ch, docs);
    await delta.waitForMsgs(20);
    await plain.waitForMsgs(20);
    expect(kinds(delta)).toBe(`F${"d".repeat(19)}`);
    expect(kinds(plain)).toBe("F".repeat(20));
    expect(delta.msgs[1]).toMatchObject({ channel: ch, sub: ch, seq: plain.msgs[1]!.seq, base: plain.msgs[0]!.seq });
    expect(applied(delta)).toEqual(docs);
    expect(delta.msgBytes / plain.msgBytes).toBeLessThan(0.3);
  });

  it("deltas — two sockets (JSON and MessagePack) share the one delta the worker made per message", async () => {
    const ch = uniq("dl.shared.");
    const json = await clients.open();
    const binary = await clients.open({ msgpack: true });
    await json.sub(ch, { delta: "fossil" });
    expect(await binary.sub(ch, { delta: "fossil" })).toMatchObject({ op: "ok", delta: "fossil" });
    const made0 = await metric("fanout_deltas_made_total");
    const sent0 = await metric("fanout_delta_frames_total", { kind: "delta" });
    const docs = documents(10);
    await publishAll(ch, docs);
    await json.waitForMsgs(10);
    await binary.waitForMsgs(10);
    expect(kinds(json)).toBe(`F${"d".repeat(9)}`);
    expect(kinds(binary)).toBe(`F${"d".repeat(9)}`);
    expect(binary.textFrames).toBe(0);
    expect(binary.msgs[1]!.data).toBeInstanceOf(Uint8Array); // the delta's bytes, not a string
    expect(applied(json)).toEqual(docs);
    expect(applied(binary)).toEqual(docs);
    // One delta per message after the first, whatever the number of subscribers; each got it.
    expect((await metric("fanout_deltas_made_total")) - made0).toBe(9);
    expect((await metric("fanout_delta_frames_total", { kind: "delta" })) - sent0).toBe(18);
  });

  it("deltas — a resume in the middle of a delta chain: the catch-up and the next live message are full, then deltas", async () => {
    const ch = uniq("dl.resume.");
    const docs = documents(8);
    const first = await clients.open();
    await first.sub(ch, { delta: "fossil" });
    const seqs = await publishAll(ch, docs.slice(0, 4));
    await first.waitForMsgs(4);
    expect(kinds(first)).toBe("Fddd");
    first.close();
    // The client had up to the second message: it resumes after it.
    const again = await clients.open();
    expect(await again.sub(ch, { delta: "fossil", from: { seq: seqs[1]! + 1 } })).toMatchObject({ op: "ok", delta: "fossil" });
    await again.waitForMsgs(2);
    await waitFor(() => again.frames.find((f) => f.op === "live"), { what: "live frame" });
    await publishAll(ch, docs.slice(4));
    await again.waitForMsgs(6);
    expect(kinds(again)).toBe("FFFddd");
    expect(applied(again)).toEqual(docs.slice(2));
  });

  it("deltas — a wildcard subscription: each channel's first message is full, then deltas per channel", async () => {
    const ch = uniq("dl.wild.");
    const c = await clients.open();
    await c.sub(`${ch}.*`, { delta: "fossil" });
    const a = documents(3);
    const b = documents(3).map((d) => ({ ...(d as object), side: "b" }));
    for (let i = 0; i < 3; i++) {
      await httpPublish(gw.url, `${ch}.a`, a[i]);
      await httpPublish(gw.url, `${ch}.b`, b[i]);
    }
    await c.waitForMsgs(6);
    expect(kinds(c)).toBe("FFdddd");
    expect(c.msgs.filter((m) => m.delta === true).every((m) => m.base === c.msgs[c.msgs.indexOf(m) - 2]!.seq)).toBe(true);
    expect(applied(c)).toEqual([a[0], b[0], a[1], b[1], a[2], b[2]]);
  });

  it("deltas — a delta not smaller than the message is sent full", async () => {
    const ch = uniq("dl.small.");
    const c = await clients.open();
    await c.sub(ch, { delta: "fossil" });
    // Short documents that share nothing: a delta would be larger than each.
    const docs = Array.from({ length: 5 }, (_, i) => ({ v: `${i}`.repeat(3 + i) }));
    await publishAll(ch, docs);
    await c.waitForMsgs(5);
    expect(kinds(c)).toBe("FFFFF");
    expect(applied(c)).toEqual(docs);
  });

  it("deltas — a payload crafted to slow the delta encoder goes full past the work bound, counted in fanout_deltas_skipped_total", async () => {
    const ch = uniq("dl.slow.");
    const c = await clients.open();
    await c.sub(ch, { delta: "fossil" });
    const [base, target] = slowDeltaPair(60_000).map((s) => JSON.parse(s) as unknown);
    const [skipped0, made0] = [await metric("fanout_deltas_skipped_total"), await metric("fanout_deltas_made_total")];
    await publishAll(ch, [base, target]);
    await c.waitForMsgs(2);
    expect(kinds(c)).toBe("FF");
    expect(c.msgs.map((m) => m.data)).toEqual([base, target]);
    expect((await metric("fanout_deltas_skipped_total")) - skipped0).toBe(1);
    expect((await metric("fanout_deltas_made_total")) - made0).toBe(0);
  });

  it("deltas — refused where it cannot be served: durable subscriptions, another algorithm, Server-Sent Events", async () => {
    const ch = uniq("dl.refused.");
    const c = await clients.open();
    expect(await c.request({ op: "sub", channel: ch, delta: "fossil", durable: "d1", ack: true })).toMatchObject({
      op: "err",
      code: "bad_request",
      message: "delta is not available on durable subscriptions",
    });
    expect(await c.request({ op: "sub", channel: ch, delta: "xdelta" })).toMatchObject({ op: "err", code: "bad_request" });
    const sse = await SseReader.open(`${gw.url}/v1/channels/${encodeURIComponent(ch)}/events?delta=fossil`);
    expect(sse.status).toBe(400);
    sse.close();
  });
});
