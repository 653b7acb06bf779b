import type { IncomingMessage } from "node:http";
import { randomUUID } from "node:crypto";
import WebSocket from "ws";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient, type GatewayEvent, type WebSocketConstructor } from "../client/src/index.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { connectionInodes, pidsHoldingInodes } from "#testkit/proc-sockets.js";
import { httpPublish } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
const clients: GatewayClient[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, logLevel: "info", args: ["--restart-backoff", "100ms"] });
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

const uniq = (p: string) => `${p}.${randomUUID().slice(0, 8)}`;

/** A `ws` WebSocket that records the local port of each connection, to find the worker serving it. */
function trackedWebSocket(): { ctor: WebSocketConstructor; ports: number[] } {
  const ports: number[] = [];
  class Tracked extends WebSocket {
    constructor(url: string, protocols?: string | string[]) {
      super(url, protocols);
      this.once("upgrade", (res: IncomingMessage) => ports.push(res.socket.localPort!));
    }
  }
  return { ctor: Tracked, ports };
}

function client(ctor: WebSocketConstructor = WebSocket, events?: GatewayEvent[]): GatewayClient {
  const c = new GatewayClient(gw.wsUrl, { WebSocket: ctor, minDelayMs: 20, maxDelayMs: 300 });
  if (events) for (const t of ["connecting", "connected", "disconnected", "resubscribed", "gap", "error"] as const) c.on(t, (e) => events.push(e));
  clients.push(c);
  return c;
}

/** The pid of the worker holding the server side of the connection from `clientPort`. */
async function workerServing(clientPort: number): Promise<number> {
  const holders = pidsHoldingInodes(await childPids(gw.process.pid!), connectionInodes(gw.port, clientPort));
  expect(holders).toHaveLength(1);
  return holders[0]!;
}

async function killWorkerServing(clientPort: number): Promise<number> {
  const pid = await workerServing(clientPort);
  process.kill(pid, "SIGKILL");
  return pid;
}

/** HTTP publish retried with the same Idempotency-Key until a worker answers 201 (workers may be restarting). */
function publishHttp(channel: string, data: unknown, key: string): Promise<number> {
  return waitFor(
    async () => {
      const r = await httpPublish(gw.url, channel, data, { "idempotency-key": key });
      return r.status === 201 ? (r.body.seq as number) : undefined;
    },
    { timeoutMs: 15_000, what: `publish ${key}` },
  );
}

async function storedCount(channel: string): Promise<number> {
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info("FANOUT_CHANNELS", { subjects_filter: `ev.${channel}` });
  return info.state.subjects?.[`ev.${channel}`] ?? 0;
}

describe("client — reconnect and resume", () => {
  it("client — resumes after its worker is SIGKILLed mid-stream: every seq once, in order", async () => {
    const channel = uniq("resume");
    const t = trackedWebSocket();
    const events: GatewayEvent[] = [];
    const c = client(t.ctor, events);
    const seen: number[] = [];
    await c.connect();
    await c.subscribe(channel, (m) => void seen.push(m.seq)).ready;

    const published: number[] = [];
    let killed = 0;
    for (let i = 0; i < 150; i++) {
      published.push(await publishHttp(channel, { i }, `${channel}-${i}`));
      if (i === 50) killed = await killWorkerServing(t.ports[0]!);
    }
    await waitFor(() => seen.length >= published.length && seen.at(-1) === published.at(-1), {
      timeoutMs: 15_000,
      what: `all ${published.length} messages (have ${seen.length})`,
    });

    expect(killed).toBeGreaterThan(0);
    expect(seen).toEqual(published); // no loss, no duplicate, stream order
    expect(t.ports.length).toBeGreaterThanOrEqual(2);
    const lost = events.findIndex((e) => e.type === "disconnected");
    expect(events[lost]).toMatchObject({ type: "disconnected", code: 1006, willReconnect: true });
    expect(events.slice(lost).some((e) => e.type === "resubscribed" && e.subscriptions === 1)).toBe(true);
    expect(c.stats.reconnects).toBeGreaterThanOrEqual(1);
    expect(events.filter((e) => e.type === "gap" || e.type === "error")).toEqual([]);
  });

  it("client — a subscription that saw messages resumes from last+1 across a reconnect, nothing replayed twice", async () => {
    const channel = uniq("from");
    const t = trackedWebSocket();
    const c = client(t.ctor);
    const seen: number[] = [];
    await c.connect();
    const sub = c.subscribe(channel, (m) => void seen.push(m.seq), { from: "all" });
    await sub.ready;
    const first = [await publishHttp(channel, 1, uniq("k")), await publishHttp(channel, 2, uniq("k"))];
    await waitFor(() => seen.length === 2);
    await killWorkerServing(t.ports[0]!);
    const more = await publishHttp(channel, 3, uniq("k"));
    await waitFor(() => seen.length >= 3, { timeoutMs: 15_000, what: "the message published while disconnected" });
    expect(seen).toEqual([...first, more]);
    expect(sub.lastSeq).toBe(more);
  });

  it("client — resume on a freshly restarted worker replays what was published while no worker ran", async () => {
    const channel = uniq("allkilled");
    const events: GatewayEvent[] = [];
    const c = client(WebSocket, events);
    const seen: number[] = [];
    await c.connect();
    await c.subscribe(channel, (m) => void seen.push(m.seq)).ready;
    const published: number[] = [];
    for (let i = 0; i < 5; i++) published.push(await publishHttp(channel, { i }, `${channel}-${i}`));
    await waitFor(() => seen.length === 5);
    for (const pid of await childPids(gw.process.pid!)) process.kill(pid, "SIGKILL");
    for (let i = 5; i < 15; i++) published.push(await publishHttp(channel, { i }, `${channel}-${i}`));
    await waitFor(() => seen.length >= 15, { timeoutMs: 15_000, what: "15 messages" }).catch((e: Error) => {
      throw new Error(`${e.message}: have ${JSON.stringify(seen)} of ${JSON.stringify(published)}; events ${JSON.stringify(events)}`);
    });
    expect(seen).toEqual(published);
    await waitFor(async () => (await childPids(gw.process.pid!)).length === 2, { what: "both workers back" });
  });
});

describe("client — publishing", () => {
  it("client — publishes made before connecting are queued, sent in order, each stored once", async () => {
    const channel = uniq("queued");
    const c = client();
    const pending = Array.from({ length: 20 }, (_, i) => c.publish(channel, { i }));
    await c.connect();
    const results = await Promise.all(pending);
    const seqs = results.map((r) => r.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(20);
    expect(results.every((r) => r.duplicate === false)).toBe(true);
    expect(await storedCount(channel)).toBe(20);
    await c.close();
    await expect(c.publish(channel, 1)).rejects.toMatchObject({ code: "closed" });
  });

  it("client — publishes in flight when the worker dies are re-sent with their msgId and stored once", async () => {
    const channel = uniq("inflight");
    const t = trackedWebSocket();
    const c = client(t.ctor);
    await c.connect();
    await c.publish(channel, { warm: true });
    const worker = await workerServing(t.ports[0]!);
    // Same tick: all 60 frames are written, then the worker dies before any reply can be read. Some were
    // stored (their reply is lost), some never arrived; all are re-sent with their msgId on the next socket.
    const pending = Array.from({ length: 60 }, (_, i) => c.publish(channel, { i }));
    process.kill(worker, "SIGKILL");
    const results = await Promise.all(pending);
    expect(t.ports.length).toBeGreaterThanOrEqual(2);
    expect(new Set(results.map((r) => r.seq)).size).toBe(60);
    expect(await storedCount(channel)).toBe(61);
    console.log(`in-flight publishes: ${results.filter((r) => r.duplicate).length} of 60 had been stored before the kill (answered duplicate:true on re-send)`);
  });

  it("client — a repeated msgId answers duplicate:true with the original seq", async () => {
    const channel = uniq("dup");
    const c = client();
    await c.connect();
    const a = await c.publish(channel, { n: 1 }, { msgId: "same-id" });
    const b = await c.publish(channel, { n: 1 }, { msgId: "same-id" });
    expect(b).toEqual({ seq: a.seq, duplicate: true });
    await expect(c.publish("bad channel", 1)).rejects.toMatchObject({ name: "GatewayError", code: "bad_channel" });
  });

  it("client — publishBatch: one result per item in order, a bad item answered in its place, re-sent after a worker dies and stored once", async () => {
    const channel = uniq("batch");
    const t = trackedWebSocket();
    const c = client(t.ctor);
    await c.connect();
    const first = await c.publishBatch([
      { channel, data: 0 },
      { channel: "bad channel", data: 1 },
      { channel, data: 2 },
    ]);
    expect(first[0]).toMatchObject({ seq: expect.any(Number), duplicate: false });
    expect(first[1]).toMatchObject({ error: { name: "GatewayError", code: "bad_channel", temporary: false } });
    expect((first[2] as { seq: number }).seq).toBeGreaterThan((first[0] as { seq: number }).seq);
    const worker = await workerServing(t.ports[0]!);
    const pending = Array.from({ length: 10 }, (_, b) => c.publishBatch(Array.from({ length: 10 }, (_, i) => ({ channel, data: { b, i } }))));
    process.kill(worker, "SIGKILL");
    const results = (await Promise.all(pending)).flat() as { seq: number }[];
    expect(new Set(results.map((r) => r.seq)).size).toBe(100);
    expect(await storedCount(channel)).toBe(102);
  });
});
