// Coalesced frames against a real gateway and nats-server (PROTOCOL.md "Coalesced frames"): a namespace's
// `coalesce` window sends a pattern's messages to the connections that said `coalesce=1` as one frame per
// window, in order, with their seqs; a connection that did not opt in gets one frame per message on the same
// channel; a resume crosses coalesced frames without gap or repeat; an unsubscribe's answer comes after what
// was held; outside the namespace (window off) nothing changes; a delta subscription is not coalesced. A
// catch-up (a resume from a seq) of a connection that opted in comes in coalesced frames, window or not.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeltaBases } from "../client/src/deltas.js";
import type { Frame } from "../client/src/types.js";
import { nextScoreboard, scoreboard } from "../conformance/fossil-vectors.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { waitFor } from "#testkit/wait.js";
import type { TestClient } from "#testkit/ws-client.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let dir: string;
const clients = new ClientPool(() => gw.wsUrl);
const uniq = uniqueNames();
const coalescing = (msgpack = false) => clients.open({ url: `${gw.wsUrl}?coalesce=1`, msgpack });

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fgw-coalesce-"));
  // co: a window long enough that a batch published at once lands in one (the machine may be slow); hold: a
  // window the tests never wait for, so only a flush can deliver what it holds.
  writeFileSync(join(dir, "namespaces.yaml"), "namespaces:\n  co:\n    coalesce: 300ms\n  hold:\n    coalesce: 1s\n");
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, args: ["--feed-linger", "100ms"], env: { NAMESPACES_FILE: join(dir, "namespaces.yaml") } });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Publishes `n` messages `{i}` to `channel` in one HTTP batch (stored in order, fanned out at once); their seqs. */
async function publishBatch(channel: string, n: number, from = 1): Promise<number[]> {
  return publishData(
    channel,
    Array.from({ length: n }, (_, k) => ({ i: from + k })),
  );
}

/** Publishes each of `data` to `channel` in one HTTP batch; their seqs. */
async function publishData(channel: string, data: readonly unknown[]): Promise<number[]> {
  const items = data.map((d) => ({ channel, data: d }));
  const r = await fetch(`${gw.url}/v1/publish`, { method: "POST", body: JSON.stringify(items), headers: { "content-type": "application/json" } });
  expect(r.status).toBe(200);
  const body = (await r.json()) as { results: { seq: number }[] };
  return body.results.map((x) => x.seq);
}

/** The `i` of each message's data (a msgpack message's JSON data is its text's bytes). */
const values = (c: TestClient) =>
  c.msgs.map((m) => (m.data instanceof Uint8Array ? (JSON.parse(Buffer.from(m.data).toString()) as { i: number }) : (m.data as { i: number })).i);

describe("coalesce — coalesced frames on a real gateway", () => {
  it("coalesce — a window's messages come in fewer frames than messages, in order; a socket that did not opt in gets one frame each", async () => {
    const ch = uniq("co.live.");
    const co = await coalescing();
    const plain = await clients.open();
    await co.sub(ch);
    await plain.sub(ch);
    const seqs = await publishBatch(ch, 10);
    await co.waitForMsgs(10);
    await plain.waitForMsgs(10);
    expect(co.msgs.map((m) => m.seq)).toEqual(seqs);
    expect(values(co)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(co.msgs[0]).toMatchObject({ op: "msg", channel: ch, sub: ch, data: { i: 1 } });
    expect(Math.max(...co.msgsPerFrame)).toBeGreaterThan(1);
    expect(co.msgsPerFrame.reduce((a, b) => a + b, 0)).toBe(10);
    expect(plain.msgs.map((m) => m.seq)).toEqual(seqs);
    expect(plain.msgsPerFrame).toEqual(Array.from({ length: 10 }, () => 1));
  });

  it("coalesce — msgpack: the coalesced frame is an array of msg maps, in order", async () => {
    const ch = uniq("co.mp.");
    const co = await coalescing(true);
    await co.sub(ch);
    const seqs = await publishBatch(ch, 6);
    await co.waitForMsgs(6);
    expect(co.msgs.map((m) => m.seq)).toEqual(seqs);
    expect(co.textFrames).toBe(0);
    expect(Math.max(...co.msgsPerFrame)).toBeGreaterThan(1);
  });

  it("coalesce — a resume from a seq inside a coalesced frame gets the rest once, then live in coalesced frames", async () => {
    const ch = uniq("co.resume.");
    const first = await coalescing();
    await first.sub(ch);
    const seqs = await publishBatch(ch, 8);
    await first.waitForMsgs(8);
    first.close();
    // The client saw up to the fourth: it resumes after it, while more messages come.
    const again = await coalescing();
    await again.sub(ch, { from: { seq: seqs[3]! + 1 } });
    const more = await publishBatch(ch, 6, 9);
    await again.waitForMsgs(10);
    expect(again.msgs.map((m) => m.seq)).toEqual([...seqs.slice(4), ...more]);
    expect(values(again)).toEqual([5, 6, 7, 8, 9, 10, 11, 12, 13, 14]);
    // Every message after the `live` frame is newer than the seq it names.
    const live = again.log.findIndex((f) => f.op === "live");
    expect(live).toBeGreaterThanOrEqual(0);
    const liveSeq = again.log[live]!.seq as number;
    expect(again.log.slice(live + 1).every((f) => f.op !== "msg" || (f.seq as number) > liveSeq)).toBe(true);
    // And every message before it (the catch-up's and the held live ones) is at or below that seq.
    expect(again.log.slice(0, live).every((f) => f.op !== "msg" || (f.seq as number) <= liveSeq)).toBe(true);
  });

  it("coalesce — an unsubscribe's answer comes after the messages the window held", async () => {
    const ch = uniq("hold.unsub.");
    const co = await coalescing();
    const plain = await clients.open();
    await co.sub(ch);
    await plain.sub(ch);
    const seqs = await publishBatch(ch, 3);
    // The worker has them (the plain socket got them); the 1 s window still holds them for `co`.
    await plain.waitForMsgs(3);
    const ack = await co.request({ op: "unsub", channel: ch });
    expect(ack).toMatchObject({ op: "ok" });
    const at = co.log.indexOf(ack);
    expect(co.log.slice(0, at).map((f) => (f.op === "msg" ? f.seq : f.op))).toEqual(["ok", ...seqs]);
  });

  it("coalesce — a delta subscription is not coalesced, on a coalescing connection too; a full message's text is the same inside a coalesced frame", async () => {
    const ch = uniq("co.delta.");
    const delta = await coalescing();
    const co = await coalescing();
    expect(await delta.sub(ch, { delta: "fossil" })).toMatchObject({ op: "ok", delta: "fossil" });
    await co.sub(ch);
    let doc = scoreboard();
    let seed = 11;
    const rnd = () => ((seed = (seed * 16_807) % 2_147_483_647) - 1) / 2_147_483_646;
    const docs = Array.from({ length: 8 }, () => (doc = nextScoreboard(doc, rnd)));
    const seqs = await publishData(ch, docs);
    await delta.waitForMsgs(8);
    await co.waitForMsgs(8);
    // Each of the delta subscription's messages is its own frame: the first full, then deltas it applies.
    expect(delta.msgsPerFrame).toEqual(Array.from({ length: 8 }, () => 1));
    expect(delta.msgs.map((m) => (m.delta === true ? "d" : "F")).join("")).toBe(`F${"d".repeat(7)}`);
    const bases = new DeltaBases();
    const applied = delta.msgs.map((m, i) => {
      const got = bases.receive(m as Frame, delta.raws[i]!);
      if (!got.ok) throw new Error(`seq ${m.seq}: ${got.reason}`);
      return got.data;
    });
    expect(applied).toEqual(docs);
    // The same window reached the plain subscription coalesced, and the first message's part there is
    // byte for byte the full frame the delta subscription got alone (its base).
    expect(co.msgs.map((m) => m.seq)).toEqual(seqs);
    expect(Math.max(...co.msgsPerFrame)).toBeGreaterThan(1);
    expect(co.raws[0]).toBe(delta.raws[0]);
  });

  it("coalesce — outside a coalescing namespace (window off) every message is its own frame, opted in or not", async () => {
    const ch = uniq("plain.off.");
    const co = await coalescing();
    await co.sub(ch);
    const seqs = await publishBatch(ch, 5);
    await co.waitForMsgs(5);
    expect(co.msgs.map((m) => m.seq)).toEqual(seqs);
    expect(co.msgsPerFrame).toEqual([1, 1, 1, 1, 1]);
  });

  /** Subscribes `c` to `channel` from `from` and waits for the catch-up to join live delivery (its `live` frame). */
  async function resume(c: TestClient, channel: string, from: number, n: number): Promise<void> {
    expect(await c.sub(channel, { from: { seq: from } })).toMatchObject({ op: "ok" });
    await c.waitForMsgs(n);
    await waitFor(() => c.log.some((f) => f.op === "live"));
  }

  for (const msgpack of [false, true]) {
    it(`coalesce — ${msgpack ? "msgpack" : "json"}: a catch-up of a connection that opted in comes in fewer frames than messages, in order, once each, with the window off; without the opt-in one frame per message`, async () => {
      const ch = uniq("plain.catchup.");
      const seqs = await publishBatch(ch, 300);
      const co = await coalescing(msgpack);
      const plain = await clients.open({ msgpack });
      const delta = await coalescing(msgpack);
      // From inside the stream: the first page starts with the resume position, not a page's first message.
      await resume(co, ch, seqs[7]!, 293);
      await resume(plain, ch, seqs[7]!, 293);
      expect(co.msgs.map((m) => m.seq)).toEqual(seqs.slice(7));
      expect(values(co)).toEqual(Array.from({ length: 293 }, (_, i) => i + 8));
      expect(co.msgsPerFrame.reduce((a, b) => a + b, 0)).toBe(293);
      expect(co.msgsPerFrame.length).toBeLessThan(30);
      expect(plain.msgs.map((m) => m.seq)).toEqual(seqs.slice(7));
      expect(plain.msgsPerFrame).toEqual(Array.from({ length: 293 }, () => 1));
      if (msgpack) expect(co.textFrames).toBe(0);
      // Live messages after the catch-up: the window is off here, so one frame each.
      const more = await publishBatch(ch, 3, 301);
      await co.waitForMsgs(296);
      expect(co.msgs.slice(293).map((m) => m.seq)).toEqual(more);
      expect(co.msgsPerFrame.slice(-3)).toEqual([1, 1, 1]);
      // A delta subscription's catch-up is not coalesced, on a connection that opted in too.
      expect(await delta.sub(ch, { from: { seq: seqs[0]! }, delta: "fossil" })).toMatchObject({ op: "ok", delta: "fossil" });
      await delta.waitForMsgs(303);
      expect(delta.msgs.map((m) => m.seq)).toEqual([...seqs, ...more]);
      expect(delta.msgsPerFrame).toEqual(Array.from({ length: 303 }, () => 1));
    });
  }
});
