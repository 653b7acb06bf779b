import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EVENT_TYPES, GatewayClient, type GatewayEvent, type GatewayMessage } from "../src/index.js";
import { fakeWebSocket, flush, type FakeSocket } from "./fake-socket.js";
import { createDelta } from "fossil-delta";

// The client against an in-process fake socket: the test plays the server frame by frame, and the fake
// timers make every backoff delay run when the test says so.
// No fetch: a failed attempt is retried without asking why (connection.test.ts covers the asking).
beforeEach(() => {
  vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  vi.stubGlobal("fetch", undefined);
});
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

function setup(options: ConstructorParameters<typeof GatewayClient>[1] = {}) {
  const fake = fakeWebSocket();
  const client = new GatewayClient("http://gw.test/ws", { WebSocket: fake.WebSocket, minDelayMs: 100, maxDelayMs: 1_000, ...options });
  const events: GatewayEvent[] = [];
  for (const t of EVENT_TYPES) client.on(t, (e) => void events.push(e));
  return { ...fake, client, events };
}

/** Runs the pending reconnect timer: a new socket is created. */
const reconnect = async (sockets: FakeSocket[]): Promise<FakeSocket> => {
  const n = sockets.length;
  await vi.runOnlyPendingTimersAsync();
  expect(sockets.length).toBe(n + 1);
  return sockets.at(-1)!;
};

const msg = (sub: string, channel: string, seq: number) => ({ op: "msg", sub, channel, seq, ts: 1, data: { seq } });

/** A channel's documents and the Fossil deltas between them, as the server frames them. */
const doc = (n: number) => ({ n, text: "a state document that mostly stays the same ".repeat(4) });
const bytesOf = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
const deltaMsg = (channel: string, seq: number, base: number, from: unknown, to: unknown) => ({
  op: "msg",
  channel,
  sub: channel,
  seq,
  ts: 1,
  delta: true,
  base,
  data: new TextDecoder().decode(createDelta(bytesOf(from), bytesOf(to))),
});
const fullMsg = (channel: string, seq: number, data: unknown) => ({ op: "msg", channel, sub: channel, seq, ts: 1, data });

describe("client — deltas against a fake socket", () => {
  it("client — delta: fossil applies deltas; one without its base is never shown: unsub, then sub again from its position", async () => {
    const { client, last } = setup();
    const connected = client.connect();
    const ws = last();
    ws.open();
    await connected;
    const got: unknown[] = [];
    client.subscribe("s", (m) => void got.push(m.data), { delta: "fossil" });
    const sub = ws.frames("sub")[0];
    expect(sub).toMatchObject({ channel: "s", delta: "fossil" });
    ws.ok(sub, { epoch: "E1", delta: "fossil" });
    ws.deliver(fullMsg("s", 3, doc(1)));
    ws.deliver(deltaMsg("s", 5, 3, doc(1), doc(2)));
    expect(got).toEqual([doc(1), doc(2)]);
    ws.deliver(deltaMsg("s", 9, 7, doc(3), doc(4))); // its base (7) never arrived
    expect(got).toEqual([doc(1), doc(2)]);
    expect(client.stats.deltasLost).toBe(1);
    expect(ws.sent.slice(-2)).toMatchObject([
      { op: "unsub", channel: "s" },
      { op: "sub", channel: "s", delta: "fossil", from: { seq: 6, epoch: "E1" } },
    ]);
    ws.deliver(deltaMsg("s", 10, 9, doc(4), doc(5))); // before the ok: the old subscription's, dropped
    ws.ok(ws.frames("sub")[1], { epoch: "E1", delta: "fossil" });
    ws.deliver(fullMsg("s", 7, doc(3)));
    ws.deliver(deltaMsg("s", 9, 7, doc(3), doc(4)));
    expect(got).toEqual([doc(1), doc(2), doc(3), doc(4)]);
    expect(client.stats.deltasLost).toBe(1);
  });
});

describe("client — resume against a fake socket", () => {
  it("client — resubscribes from last+1 with the epoch, drops frames until the ok and repeats after it", async () => {
    const { client, last, sockets, events } = setup();
    const connected = client.connect();
    let ws = last();
    expect(ws.url).toBe("ws://gw.test/ws?coalesce=1");
    ws.open();
    await connected;
    const got: number[] = [];
    const sub = client.subscribe("a.*", (m) => void got.push(m.seq), { from: { last: 2 } });
    expect(ws.frames("sub")).toMatchObject([{ channel: "a.*", from: { last: 2 } }]);
    ws.ok(ws.frames("sub")[0], { epoch: "E1", firstSeq: 1, lastSeq: 4 });
    await expect(sub.ready).resolves.toEqual({ epoch: "E1", firstSeq: 1, lastSeq: 4 });
    for (const s of [3, 4, 4]) ws.deliver(msg("a.*", "a.x", s));
    expect(got).toEqual([3, 4]);

    ws.drop(1001, "drain");
    expect(events.at(-1)).toMatchObject({ type: "disconnected", code: 1001, willReconnect: true });
    ws = await reconnect(sockets);
    ws.open();
    const resub = ws.frames("sub")[0];
    expect(resub).toMatchObject({ channel: "a.*", from: { seq: 5, epoch: "E1" } });
    ws.deliver(msg("a.*", "a.x", 9)); // a frame of the server's subscription before the ok: not this one's
    ws.ok(resub, { epoch: "E1" });
    for (const s of [4, 5, 6]) ws.deliver(msg("a.*", "a.x", s));
    expect(got).toEqual([3, 4, 5, 6]);
    expect(sub.lastSeq).toBe(6);
    expect(client.stats).toEqual({ reconnects: 1, duplicatesDropped: 2, deltasLost: 0 });
    expect(events.filter((e) => e.type === "resubscribed")).toHaveLength(2);
  });

  it("client — a resume whose start is gone reports a gap; a refused one ends the subscription (permanent) or reconnects (temporary)", async () => {
    const { client, last, sockets, events } = setup();
    void client.connect();
    let ws = last();
    ws.open();
    const a = client.subscribe("a.x", () => undefined, { from: { seq: 10 } });
    const b = client.subscribe("b.x", () => undefined);
    const [sa, sb] = ws.frames("sub");
    ws.ok(sa, { truncated: true, firstSeq: 40, lastSeq: 50, epoch: "E" });
    ws.deliver({ op: "err", id: sb!.id, code: "forbidden", message: "no sub right", temporary: false });
    await flush();
    expect(events.filter((e) => e.type === "gap")).toEqual([{ type: "gap", channel: "a.x", expectedSeq: 10, firstSeq: 40 }]);
    await expect(b.ready).rejects.toMatchObject({ code: "forbidden" });
    expect(events.filter((e) => e.type === "error")).toMatchObject([{ channel: "b.x", error: { code: "forbidden" } }]);

    // A temporary refusal of a resubscribe drops the connection (4000) and tries again with backoff.
    ws.drop();
    ws = await reconnect(sockets);
    ws.open();
    expect(ws.frames("sub").map((f) => f.channel)).toEqual(["a.x"]);
    ws.deliver({ op: "err", id: ws.frames("sub")[0]!.id, code: "broker_unavailable", message: "down", temporary: true });
    await flush();
    expect(ws.closedWith).toEqual({ code: 4000, reason: "resubscribe failed: broker_unavailable" });
    ws = await reconnect(sockets);
    ws.open();
    ws.ok(ws.frames("sub")[0]);
    expect(a.lastSeq).toBe(0);
  });
});

describe("client — backoff against a fake socket", () => {
  it("client — failed attempts back off within min·2^n up to max; the count starts over only once every subscription is back", async () => {
    const { client, last, sockets, events } = setup({ minDelayMs: 100, maxDelayMs: 350 });
    void client.connect();
    client.subscribe("a.x", () => undefined);
    for (let i = 0; i < 4; i++) {
      last().drop(1006);
      await reconnect(sockets);
    }
    const delays = events.flatMap((e) => (e.type === "disconnected" ? [e.reconnectInMs!] : []));
    delays.forEach((d, n) => expect(d).toBeLessThanOrEqual(Math.min(350, 100 * 2 ** n)));
    expect(events.filter((e) => e.type === "connecting").map((e) => (e as { attempt: number }).attempt)).toEqual([0, 1, 2, 3, 4]);
    // Open, but the resubscribe is not answered yet: a drop now still counts as a failed attempt.
    let ws = last();
    ws.open();
    ws.drop();
    ws = await reconnect(sockets);
    expect(events.at(-1)).toEqual({ type: "connecting", attempt: 5 });
    ws.open();
    ws.ok(ws.frames("sub")[0]);
    ws.drop();
    const d = events.at(-1) as Extract<GatewayEvent, { type: "disconnected" }>;
    expect(d.reconnectInMs).toBeLessThanOrEqual(100); // attempt 0's cap again, not 350
    await reconnect(sockets);
    expect(events.at(-1)).toEqual({ type: "connecting", attempt: 1 });
  });

  it("client — a connection attempt not open by connectTimeoutMs is abandoned and retried", async () => {
    const { client, last, sockets } = setup({ connectTimeoutMs: 500 });
    void client.connect();
    const first = last();
    await vi.advanceTimersByTimeAsync(500);
    expect(first.closedWith).toEqual({ code: undefined, reason: undefined });
    await reconnect(sockets);
  });

  it("client — a half-open link: silent for pingTimeoutMs after a ping, it is dropped at once and reconnected; one that answers stays", async () => {
    const { client, last, sockets, events } = setup({ pingIntervalMs: 1_000, pingTimeoutMs: 400 });
    void client.connect();
    const ws = last();
    ws.open();
    await vi.advanceTimersByTimeAsync(600);
    expect(ws.frames("ping")).toHaveLength(1);
    ws.deliver({ op: "pong", id: ws.frames("ping")[0]!.id, time: 1 });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(ws.frames("ping")).toHaveLength(2);
    expect(events.some((e) => e.type === "disconnected")).toBe(false);
    // Nothing answers the second ping: within pingTimeoutMs of it the client gives up on this socket.
    await vi.advanceTimersByTimeAsync(399);
    expect(events.some((e) => e.type === "disconnected")).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(events.at(-1)).toMatchObject({ type: "disconnected", code: 1006, reason: "ping timeout", willReconnect: true });
    expect(ws.closedWith).toBeDefined();
    await reconnect(sockets);
  });

  it("client — ping options are checked: pingTimeoutMs at most pingIntervalMs; 0 switches pings off", async () => {
    expect(() => setup({ pingIntervalMs: 1_000, pingTimeoutMs: 2_000 })).toThrow(/pingTimeoutMs/);
    expect(() => setup({ pingIntervalMs: -1 })).toThrow(/pingIntervalMs/);
    const { client, last } = setup({ pingIntervalMs: 0 });
    void client.connect();
    const ws = last();
    ws.open();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ws.frames("ping")).toHaveLength(0);
  });
});

describe("client — publishing against a fake socket", () => {
  it("client — publishes made while disconnected go out in call order on open; an unanswered one is re-sent with its msgId", async () => {
    const { client, last, sockets } = setup({ queueLimit: 3 });
    const p1 = client.publish("a.1", 1);
    const p2 = client.publishBatch([{ channel: "a.2", data: 2, msgId: "b2" }]);
    const p3 = client.publish("a.3", 3, { msgId: "m3" });
    await expect(client.publish("a.4", 4)).rejects.toMatchObject({ code: "queue_full" });
    void client.connect();
    let ws = last();
    ws.open();
    const sent = ws.frames("pub");
    expect(sent.map((f) => f.channel ?? "batch")).toEqual(["a.1", "batch", "a.3"]);
    expect(sent[1]).toMatchObject({ batch: [{ channel: "a.2", data: 2, msgId: "b2" }] });
    ws.ok(sent[0], { seq: 1 });
    await expect(p1).resolves.toEqual({ seq: 1, duplicate: false });
    ws.drop();
    ws = await reconnect(sockets);
    ws.open();
    const again = ws.frames("pub");
    expect(again.map((f) => f.msgId ?? "batch")).toEqual(["batch", "m3"]);
    ws.ok(again[0], { results: [{ seq: 2, duplicate: true }] });
    ws.ok(again[1], { seq: 3, duplicate: true });
    await expect(p2).resolves.toEqual([{ seq: 2, duplicate: true }]);
    await expect(p3).resolves.toEqual({ seq: 3, duplicate: true });
  });
});

describe("client — server-side subscriptions, tokens and acks against a fake socket", () => {
  it("client — a server-side subscription's messages go to onAutoMessage; subscribe() of its pattern takes over where it is", async () => {
    const auto: number[] = [];
    const { client, last, events } = setup({ onAutoMessage: (m) => void auto.push(m.seq) });
    void client.connect();
    const ws = last();
    ws.open();
    ws.deliver({ op: "sub", auto: true, channel: "n.u1", seq: 4, epoch: "E" });
    expect(events.at(-1)).toEqual({ type: "autoSubscribed", channel: "n.u1", seq: 4 });
    for (const s of [4, 5]) ws.deliver(msg("n.u1", "n.u1", s));
    expect(auto).toEqual([5]);
    const mine: number[] = [];
    client.subscribe("n.u1", (m) => void mine.push(m.seq));
    const take = ws.frames("sub")[0]!;
    expect(take).toMatchObject({ channel: "n.u1", from: { seq: 6, epoch: "E" } });
    ws.deliver(msg("n.u1", "n.u1", 6)); // the server's one, before the ok: dropped
    ws.ok(take, { epoch: "E" });
    for (const s of [5, 6, 7]) ws.deliver(msg("n.u1", "n.u1", s));
    expect([auto, mine]).toEqual([[5], [6, 7]]);
  });

  it("client — the token goes as a subprotocol; close 4001 without getToken stops, with getToken reconnects with a fresh one", async () => {
    const stopped = setup({ token: "t0" });
    void stopped.client.connect();
    expect(stopped.last().protocols).toEqual(["fanout.v1", "bearer.t0"]);
    stopped.last().open();
    stopped.last().drop(4001, "token expired");
    expect(stopped.events.slice(-2)).toEqual([{ type: "tokenExpired" }, { type: "disconnected", code: 4001, reason: "token expired", willReconnect: false }]);
    await expect(stopped.client.publish("a.b", 1)).rejects.toMatchObject({ code: "token_expired" });

    let n = 0;
    const { client, last, sockets } = setup({ getToken: () => `t${++n}` });
    void client.connect();
    await flush();
    last().open();
    last().drop(4001);
    const ws = await reconnect(sockets);
    await flush();
    expect(ws.protocols).toEqual(["fanout.v1", "bearer.t2"]);
  });

  it("client — ack:true acks after the handler (its promise) and naks when it throws; settling twice sends once", async () => {
    const { client, last } = setup();
    void client.connect();
    const ws = last();
    ws.open();
    let held: GatewayMessage | undefined;
    client.subscribe(
      "d.x",
      async (m) => {
        if (m.seq === 2) throw new Error("boom");
        if (m.seq === 3) {
          held = m;
          m.inProgress();
        }
      },
      { durable: "billing", ack: true },
    );
    expect(ws.frames("sub")[0]).toMatchObject({ durable: "billing", ack: true });
    ws.ok(ws.frames("sub")[0]);
    for (const s of [1, 2, 3]) ws.deliver({ ...msg("d.x", "d.x", s), durable: "billing" });
    await flush();
    held!.ack();
    expect(ws.sent.filter((f) => f.op !== "sub")).toEqual([
      { op: "inprogress", seq: 3, sub: "d.x" },
      { op: "ack", seq: 1, sub: "d.x" },
      { op: "nak", seq: 2, sub: "d.x" },
      { op: "ack", seq: 3, sub: "d.x" },
    ]);
  });
});
