import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
const clients = new ClientPool(() => gw.wsUrl);
const client = () => clients.open();
const uniq = uniqueNames();
const durableConsumers = async () => {
  const out: string[] = [];
  for await (const ci of jsm.consumers.list("FANOUT_CHANNELS")) if (ci.config.durable_name) out.push(ci.name);
  return out;
};

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, args: ["--durable-ack-wait", "2s", "--durable-inactive-threshold", "3s"] });
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  clients.closeAll();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("durable — at-least-once with acks", () => {
  it("delivers with the durable name; ack settles, unknown seq is an error", async () => {
    const ch = uniq("dur.");
    const c = await client();
    expect(await c.sub(ch, { durable: "d1", ack: true })).toMatchObject({ op: "ok", durable: "d1" });
    await httpPublish(gw.url, ch, { v: 1 });
    const [m] = await c.waitForMsgs(1);
    expect(m).toMatchObject({ channel: ch, durable: "d1", data: { v: 1 } });
    expect(m!.redelivered).toBeUndefined();
    expect((await c.request({ op: "ack", seq: m!.seq })).op).toBe("ok");
    expect((await c.request({ op: "ack", seq: m!.seq })).code).toBe("unknown_seq");
    expect((await c.request({ op: "sub", channel: uniq("x."), ack: true })).code).toBe("bad_request");
    expect((await c.request({ op: "sub", channel: uniq("x."), durable: "d9", from: "all" })).code).toBe("bad_request");
  });

  // Regression: this answered broker_error, which clients take as temporary, so the SDK reconnected for ever.
  it("a durable name bound to another channel is refused with durable_conflict, temporary:false; the SDK ends that subscription instead of reconnecting", async () => {
    const a = uniq("dca.");
    const b = uniq("dcb.");
    const c = await client();
    await c.sub(a, { durable: "dc", ack: true });
    const other = await client();
    const r = await other.request({ op: "sub", channel: b, durable: "dc", ack: true });
    expect(r).toMatchObject({ op: "err", code: "durable_conflict", temporary: false });
    expect(String(r.message)).toContain(a);
    const { GatewayClient } = await import("../client/src/index.js");
    const WebSocket = (await import("ws")).default;
    const sdk = new GatewayClient(gw.wsUrl, { WebSocket: WebSocket as never, minDelayMs: 20, maxDelayMs: 50 });
    const errors: { code: string; temporary: boolean }[] = [];
    sdk.on("error", (e) => errors.push(e.error as never));
    await sdk.connect();
    const sub = sdk.subscribe(b, () => undefined, { durable: "dc", ack: true });
    await expect(sub.ready).rejects.toMatchObject({ code: "durable_conflict", temporary: false });
    expect(sdk.stats.reconnects).toBe(0);
    expect(errors.map((e) => e.code)).toEqual(["durable_conflict"]);
    await sdk.close();
  });

  it("nak with a delay redelivers after the delay, marked redelivered with the count", async () => {
    const ch = uniq("nak.");
    const c = await client();
    await c.sub(ch, { durable: "d2", ack: true });
    await httpPublish(gw.url, ch, { v: 1 });
    const [m] = await c.waitForMsgs(1);
    const t0 = Date.now();
    expect((await c.request({ op: "nak", seq: m!.seq, delay: 500 })).op).toBe("ok");
    const [, again] = await c.waitForMsgs(2);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
    expect(again).toMatchObject({ seq: m!.seq, redelivered: true, deliveries: 2 });
    await c.request({ op: "term", seq: m!.seq });
  });

  it("unacked messages are redelivered when the client comes back (on any worker)", async () => {
    const ch = uniq("redeliver.");
    const a = await client();
    await a.sub(ch, { durable: "d3", ack: true });
    for (let i = 0; i < 5; i++) await httpPublish(gw.url, ch, { i });
    await a.waitForMsgs(5);
    await a.request({ op: "ack", seq: a.msgs[0]!.seq });
    a.close();
    await a.waitClosed();
    const b = await client();
    await b.sub(ch, { durable: "d3", ack: true });
    await b.waitForMsgs(4);
    expect(b.msgs.map((m) => (m.data as { i: number }).i).sort()).toEqual([1, 2, 3, 4]);
    expect(b.msgs.every((m) => m.redelivered === true)).toBe(true);
    for (const m of b.msgs) await b.request({ op: "ack", seq: m.seq });
  });

  it("unacked messages are redelivered after ack_wait", async () => {
    const ch = uniq("ackwait.");
    const c = await client();
    await c.sub(ch, { durable: "d4", ack: true });
    await httpPublish(gw.url, ch, { v: 1 });
    await c.waitForMsgs(1);
    const [, again] = await c.waitForMsgs(2, 10_000); // ack_wait is 2 s in this gateway
    expect(again).toMatchObject({ seq: c.msgs[0]!.seq, redelivered: true });
    await c.request({ op: "ack", seq: again!.seq });
  });

  it("two sockets on one durable share its messages: each message goes to one of them", async () => {
    const ch = uniq("group.");
    const a = await client();
    const b = await client();
    await a.sub(ch, { durable: "workers", ack: true, maxInflight: 5 });
    await b.sub(ch, { durable: "workers", ack: true, maxInflight: 5 });
    const acker = (c: TestClient) => {
      let acked = 0;
      const t = setInterval(() => {
        for (; acked < c.msgs.length; acked++) c.sendRaw(JSON.stringify({ op: "ack", seq: c.msgs[acked]!.seq }));
      }, 10);
      return () => clearInterval(t);
    };
    const stops = [acker(a), acker(b)];
    for (let i = 0; i < 100; i++) await httpPublish(gw.url, ch, { i });
    await waitFor(() => a.msgs.length + b.msgs.length >= 100 || undefined, { what: "100 deliveries" });
    stops.forEach((s) => s());
    const seen = [...a.msgs, ...b.msgs].map((m) => (m.data as { i: number }).i).sort((x, y) => x - y);
    expect(seen).toEqual([...Array(100).keys()]);
    expect(a.msgs.length).toBeGreaterThan(0);
    expect(b.msgs.length).toBeGreaterThan(0);
  });

  it("maxInflight bounds unacknowledged deliveries", async () => {
    const ch = uniq("inflight.");
    const c = await client();
    await c.sub(ch, { durable: "d5", ack: true, maxInflight: 3 });
    for (let i = 0; i < 10; i++) await httpPublish(gw.url, ch, { i });
    await c.waitForMsgs(3);
    // The broker holds the rest back until something is acked: a round trip proves nothing more came.
    expect((await c.request({ op: "ping" })).op).toBe("pong");
    await httpPublish(gw.url, uniq("other."), 1);
    expect(c.msgs.length).toBe(3);
    await c.request({ op: "ack", seq: c.msgs[0]!.seq });
    await c.waitForMsgs(4);
    expect(c.msgs.length).toBe(4);
  });

  it("an abandoned durable consumer is deleted after its inactive threshold", async () => {
    const ch = uniq("abandon.");
    const c = await client();
    await c.sub(ch, { durable: "gone", ack: true });
    const before = await durableConsumers();
    expect(before.some((name) => name.endsWith("_gone"))).toBe(true);
    c.close();
    await waitFor(async () => ((await durableConsumers()).some((name) => name.endsWith("_gone")) ? undefined : true), {
      what: "durable cleaned up",
      timeoutMs: 15_000,
    });
  });
});
