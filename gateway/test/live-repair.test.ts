// The consumer-free live path against a real nats-server: core NATS delivery is at most once, so every
// loss must be found (a gap in Nats-Last-Sequence, a reconnect) and repaired from the stream.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startTcpProxy, type TcpProxy } from "#testkit/tcp-proxy.js";
import { type MsgFrame } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { SseReader } from "#testkit/sse-client.js";
import { metric } from "#testkit/metrics.js";

let nats: NatsServerHandle;
let proxy: TcpProxy;
let gw: GatewayHandle;
let nc: NatsConnection;
let js: JetStreamClient;
let jsm: JetStreamManager;
const clients = new ClientPool(() => gw.wsUrl);
const client = () => clients.open();
const uniq = uniqueNames();
const enc = new TextEncoder();

const repairs = (reason: string) => metric(gw.url, "fanout_live_repairs_total", { reason });

/** Every message of `channel` exactly once and in publish order (`i` counts up from 0). */
function expectInOrderOnce(msgs: MsgFrame[], total: number): void {
  expect(msgs.map((m) => (m.data as { i: number }).i)).toEqual(Array.from({ length: total }, (_, i) => i));
  const seqs = msgs.map((m) => m.seq);
  for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBeGreaterThan(seqs[i - 1]!);
}

/** Publishes `{"i":i}` to `<ch>.<sub>` straight into the stream; resolves with its seq. */
const publisherUnder =
  (ch: string) =>
  async (sub: string, i: number): Promise<number> =>
    (await js.publish(`ev.${ch}.${sub}`, enc.encode(`{"i":${i}}`))).seq;

/** Stores what `publish` sends with the stream's republish rule removed: stored, never seen live. */
async function unrepublished(publish: () => Promise<number>): Promise<number> {
  const info = await jsm.streams.info("FANOUT_CHANNELS");
  const rule = info.config.republish;
  await jsm.streams.update("FANOUT_CHANNELS", { ...info.config, republish: undefined });
  const seq = await publish();
  await jsm.streams.update("FANOUT_CHANNELS", { ...(await jsm.streams.info("FANOUT_CHANNELS")).config, republish: rule });
  return seq;
}

beforeAll(async () => {
  nats = await startNatsServer();
  proxy = await startTcpProxy({ host: "127.0.0.1", port: nats.port });
  // The gateway reaches NATS through the proxy, so that its connection can be cut; one worker, so that the
  // cut and the metrics concern the worker holding the sockets.
  gw = await startGateway({ natsUrl: proxy.url, workers: 1, args: ["--max-subscriptions", "1000", "--frame-rate=-1", "--frame-burst", "100000"] });
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  clients.closeAll();
  await nc?.close();
  await gw?.stop();
  await proxy?.close();
  await nats?.stop();
});

describe("live repair — gaps in the republished messages", () => {
  it("messages stored but never republished (rule removed for a while) are found by the next message's Nats-Last-Sequence and repaired: every message once, in order", async () => {
    const ch = uniq("gap.");
    const wild = `${ch}.*`;
    const a = await client();
    const b = await client();
    await a.sub(`${ch}.x`);
    await b.sub(wild);
    const before = await repairs("gap");
    let i = 0;
    const publish = async (count: number) => {
      for (let k = 0; k < count; k++, i++) await js.publish(`ev.${ch}.${i % 3 === 0 ? "x" : i % 3 === 1 ? "y" : "z"}`, enc.encode(`{"i":${i}}`));
    };
    await publish(30);
    const info = await jsm.streams.info("FANOUT_CHANNELS");
    const rule = info.config.republish;
    expect(rule?.dest).toBe("evlive.>");
    // The server stores these but publishes nothing on core NATS: to the gateway they are lost.
    await jsm.streams.update("FANOUT_CHANNELS", { ...info.config, republish: undefined });
    await publish(30);
    await jsm.streams.update("FANOUT_CHANNELS", { ...(await jsm.streams.info("FANOUT_CHANNELS")).config, republish: rule });
    await publish(30);
    await b.waitForMsgs(90);
    await a.waitForMsgs(30);
    expectInOrderOnce(b.msgs, 90);
    expect(a.msgs.map((m) => (m.data as { i: number }).i)).toEqual(Array.from({ length: 30 }, (_, k) => k * 3));
    expect(await repairs("gap")).toBeGreaterThan(before);
    expect((await jsm.streams.info("FANOUT_CHANNELS")).state.consumer_count).toBe(0);
  });
});

describe("live repair — a loss noticed late", () => {
  it("a message missed on one channel while others went on is repaired for that channel alone when its next message shows the gap: per channel in order, once", async () => {
    const ch = uniq("late.");
    const c = await client();
    await c.sub(`${ch}.*`);
    const pub = publisherUnder(ch);
    await pub("y", 0);
    const missed = await unrepublished(() => pub("y", 1)); // stored, never republished
    for (let i = 2; i < 12; i++) await pub("x", i); // newer messages on another channel arrive normally
    await c.waitForMsgs(11);
    expect(c.msgs.map((m) => m.seq)).not.toContain(missed); // not noticed yet: nothing on y since
    await pub("y", 12);
    await c.waitForMsgs(13);
    const byChannel = (name: string) => c.msgs.filter((m) => m.channel === `${ch}.${name}`).map((m) => (m.data as { i: number }).i);
    expect(byChannel("y")).toEqual([0, 1, 12]);
    expect(byChannel("x")).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(c.msgs.length).toBe(13);
  });
});

describe("live repair — late messages and sockets that caught up", () => {
  it("a message repaired late is not sent again to a socket whose catch-up already read it from the stream; a socket live since before gets it once", async () => {
    const ch = uniq("dup.");
    const live = await client();
    await live.sub(`${ch}.*`);
    const pub = publisherUnder(ch);
    const first = await pub("y", 0);
    const missed = await unrepublished(() => pub("y", 1)); // stored, never republished: the feed does not know it yet
    for (let i = 2; i < 6; i++) await pub("x", i);
    await live.waitForMsgs(5);
    // A second socket resumes from the first message: its catch-up reads the stream, `missed` included.
    const resumed = await client();
    await resumed.sub(`${ch}.*`, { from: { seq: first } });
    await resumed.waitForMsgs(6);
    expect(resumed.msgs.map((m) => m.seq)).toContain(missed);
    // The channel's next message shows the feed its gap: it repairs `missed`, late, below newer messages.
    const next = await pub("y", 6);
    await live.waitForMsgs(7);
    await resumed.waitForMsgs(7);
    expect(live.msgs.filter((m) => m.seq === missed)).toHaveLength(1);
    // Had the late message gone to the whole topic, it would have come to `resumed` again before `next`.
    expect(resumed.msgs.map((m) => m.seq).filter((s) => s === missed)).toHaveLength(1);
    expect(resumed.msgs.at(-1)?.seq).toBe(next);
    expect(resumed.msgs).toHaveLength(7);
  });
});

describe("live repair — a reconnect reads back", () => {
  it("a message stored but never republished below newer ones is found at the next reconnect, not only at its channel's next message; WebSocket and SSE both get it once", async () => {
    const ch = uniq("back.");
    const c = await client();
    await c.sub(`${ch}.*`);
    const sse = await SseReader.open(`${gw.url}/v1/channels/${encodeURIComponent(`${ch}.*`)}/events`);
    const pub = publisherUnder(ch);
    await pub("y", 0);
    const missed = await unrepublished(() => pub("y", 1)); // stored, never republished
    let last = 0;
    for (let i = 2; i < 12; i++) last = await pub("x", i);
    await c.waitForMsgs(11);
    await sse.waitForSeqs(11);
    expect(c.msgs.map((m) => m.seq)).not.toContain(missed);
    const before = await repairs("reconnect");
    await waitFor(() => proxy.connections() > 0 || undefined, { what: "the gateway connected through the proxy" });
    expect(proxy.cut()).toBeGreaterThan(0);
    await waitFor(() => c.msgs.some((m) => m.seq === missed) || undefined, { what: "the missed message after the reconnect" });
    await waitFor(() => sse.seqs.includes(missed) || undefined, { what: "the missed message on the SSE stream" });
    expect(await repairs("reconnect")).toBeGreaterThan(before);
    expect(c.msgs.filter((m) => m.seq === missed)).toHaveLength(1);
    expect([...new Set(sse.seqs)].length).toBe(sse.seqs.length);
    expect(sse.seqs.length).toBe(12);
    // The late message's event id keeps the stream position: a reconnect with it repeats nothing.
    expect(sse.lastEventId.endsWith(`:${last}`)).toBe(true);
    sse.close();
  });
});

describe("live repair — the worker's NATS connection cut under load", () => {
  it("publishing continues while the connection is down; after the reconnect the feed reads what it missed: every message once, in order", async () => {
    const ch = uniq("cut.");
    const c = await client();
    await c.sub(ch);
    const total = 1_500;
    let cutAt = -1;
    const before = await repairs("reconnect");
    for (let i = 0; i < total; i++) {
      if (i === 500 || i === 1_000) {
        await waitFor(() => proxy.connections() > 0 || undefined, { what: "the gateway connected through the proxy" });
        expect(proxy.cut()).toBeGreaterThan(0);
        cutAt = i;
      }
      // Pipelined in small groups, straight into the stream (not through the gateway, whose NATS link is down).
      const p = js.publish(`ev.${ch}`, enc.encode(`{"i":${i}}`));
      if (i % 20 === 19) await p;
    }
    expect(cutAt).toBe(1_000);
    await c.waitForMsgs(total, 30_000);
    await new Promise((r) => setTimeout(r, 200)); // nothing more may arrive: no duplicate
    expectInOrderOnce(c.msgs, total);
    expect(await repairs("reconnect")).toBeGreaterThan(before);
  }, 60_000);
});

describe("live — thousands of channels without consumers", () => {
  it("5,000 distinct channels subscribed (half of them resuming from seq 1 at once) on one worker: 0 errors, 0 consumers, every message delivered", async () => {
    const tag = uniq("many");
    const sockets = await Promise.all(Array.from({ length: 5 }, () => client()));
    // A message in every tenth channel before anyone subscribes: the resuming half must replay those.
    const stored = new Map<string, number>();
    for (let k = 0; k < 5_000; k += 10) stored.set(`${tag}.u${k}`, (await js.publish(`ev.${tag}.u${k}`, enc.encode(`{"k":${k}}`))).seq);
    for (const [s, c] of sockets.entries()) {
      for (let j = 0; j < 1_000; j++) {
        const k = s * 1_000 + j;
        c.ws.send(JSON.stringify({ op: "sub", id: k, channel: `${tag}.u${k}`, ...(k % 2 === 0 ? { from: { seq: 1 } } : {}) }));
      }
    }
    await waitFor(() => sockets.every((c) => c.frames.filter((f) => f.op === "ok" || f.op === "err").length >= 1_000) || undefined, {
      timeoutMs: 60_000,
      what: "5,000 sub replies",
    });
    const errs = sockets.flatMap((c) => c.frames.filter((f) => f.op === "err"));
    expect(errs).toEqual([]);
    expect(await metric(gw.url, "fanout_live_feeds")).toBeGreaterThanOrEqual(5_000);
    expect((await jsm.streams.info("FANOUT_CHANNELS")).state.consumer_count).toBe(0);
    // Replayed: the even channels among the stored ones.
    const replayed = [...stored.keys()].filter((ch) => Number(ch.split(".u")[1]) % 2 === 0).length;
    await waitFor(() => sockets.reduce((t, c) => t + c.msgs.length, 0) >= replayed || undefined, { timeoutMs: 30_000, what: `${replayed} replayed messages` });
    // Live: one message to each of 500 channels spread over all of them.
    const live = Array.from({ length: 500 }, (_, j) => `${tag}.u${j * 10 + 3}`);
    for (let j = 0; j < live.length; j += 50) await Promise.all(live.slice(j, j + 50).map((ch) => js.publish(`ev.${ch}`, enc.encode(`{"live":"${ch}"}`))));
    await waitFor(() => sockets.reduce((t, c) => t + c.msgs.length, 0) >= replayed + live.length || undefined, {
      timeoutMs: 30_000,
      what: "500 live messages",
    });
    const got = sockets.flatMap((c) => c.msgs);
    expect(got.length).toBe(replayed + live.length);
    expect(new Set(got.filter((m) => (m.data as { live?: string }).live).map((m) => m.channel))).toEqual(new Set(live));
    expect((await jsm.streams.info("FANOUT_CHANNELS")).state.consumer_count).toBe(0);
  }, 120_000);
});

describe("live — the stream deleted and created again (a new epoch)", () => {
  it("sockets are closed with 1012; the SDK resumes with its epoch, is told epochChanged and receives the new stream's messages", async () => {
    const { GatewayClient } = await import("../client/src/index.js");
    const WebSocket = (await import("ws")).default;
    const ch = uniq("epoch.");
    const raw = await client();
    await raw.sub(ch);
    const sdk = new GatewayClient(gw.wsUrl, { WebSocket: WebSocket as never, minDelayMs: 50, maxDelayMs: 200 });
    const gaps: unknown[] = [];
    sdk.on("gap", (e) => gaps.push(e));
    await sdk.connect();
    const got: number[] = [];
    const sub = sdk.subscribe(ch, (m) => void got.push((m.data as { i: number }).i));
    const first = await sub.ready;
    for (let i = 0; i < 3; i++) await js.publish(`ev.${ch}`, enc.encode(`{"i":${i}}`));
    await waitFor(() => got.length >= 3 || undefined, { what: "3 messages before" });
    const old = await jsm.streams.info("FANOUT_CHANNELS");
    expect(first.epoch).toBe(old.created);
    await jsm.streams.delete("FANOUT_CHANNELS");
    await jsm.streams.add(old.config);
    await waitFor(() => raw.closeCode === 1012 || undefined, { what: "close 1012 at the raw client" });
    // The new stream numbers from 1: its messages reach the resumed SDK subscription, none dropped as "old".
    await waitFor(() => gaps.length > 0 || undefined, { what: "gap event", timeoutMs: 15_000 });
    for (let i = 3; i < 5; i++) await js.publish(`ev.${ch}`, enc.encode(`{"i":${i}}`));
    await waitFor(() => got.length >= 5 || undefined, { what: "messages of the new stream", timeoutMs: 15_000 });
    expect(got).toEqual([0, 1, 2, 3, 4]);
    expect(gaps[0]).toMatchObject({ type: "gap", channel: ch, epochChanged: true, firstSeq: 0 });
    await sdk.close();
  }, 60_000);
});
