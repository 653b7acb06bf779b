// What one connection can put in the events stream, against a real gateway and nats-server (issue 41): the
// stream is bounded by EVENTS_MAX_BYTES, applied at start to a stream made before without a bound; a socket
// that subscribes and unsubscribes in a loop records its EVENTS_BURST_PER_CONNECTION and then about
// EVENTS_RATE_PER_CONNECTION a second, the rest counted in fanout_events_dropped_total, while another
// socket's events are recorded; a `disconnect` says who closed: a client's close code and reason are
// recorded as the client's (`by: "client"`), never as the gateway's, and the gateway's own close as its own.
import { jetstreamManager } from "@nats-io/jetstream";
import { connect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { uniqueNames } from "#testkit/clients.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { metric } from "#testkit/metrics.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { waitFor } from "#testkit/wait.js";
import { TestClient } from "#testkit/ws-client.js";

type Event = { type: string; client?: string; channel?: string; by?: string; code?: number; reason?: string };

let nats: NatsServerHandle;
let gw: GatewayHandle;
const uniq = uniqueNames();
const BURST = 4;

/** Every event stored so far, in stream order. */
async function stored(): Promise<Event[]> {
  const nc = await connect({ servers: nats.url });
  try {
    const jsm = await jetstreamManager(nc);
    const { first_seq, last_seq } = (await jsm.streams.info("FANOUT_EVENTS")).state;
    const out: Event[] = [];
    for (let seq = first_seq; seq <= last_seq; seq++) out.push((await jsm.streams.getMessage("FANOUT_EVENTS", { seq }))!.json<Event>());
    return out;
  } finally {
    await nc.close();
  }
}

/** The events of the socket that subscribed to `channel` first. */
async function eventsOf(channel: string): Promise<Event[]> {
  const all = await stored();
  const client = all.find((e) => e.type === "subscribe" && e.channel === channel)?.client;
  return client === undefined ? [] : all.filter((e) => e.client === client);
}

beforeAll(async () => {
  nats = await startNatsServer();
  // A stream from an older gateway: no byte bound.
  const nc = await connect({ servers: nats.url });
  await (await jetstreamManager(nc)).streams.add({ name: "FANOUT_EVENTS", subjects: ["fanout.events.>"], max_bytes: -1 });
  await nc.close();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: {
      EVENTS: "connect,disconnect,subscribe,unsubscribe",
      EVENTS_MAX_BYTES: "2MiB",
      EVENTS_RATE_PER_CONNECTION: "1",
      EVENTS_BURST_PER_CONNECTION: String(BURST),
    },
  });
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

describe("events bounds — what one connection can record", () => {
  it("events bounds — EVENTS_MAX_BYTES bounds the events stream, applied at start to a stream made without a bound", async () => {
    const nc = await connect({ servers: nats.url });
    try {
      const config = (await (await jetstreamManager(nc)).streams.info("FANOUT_EVENTS")).config;
      expect(config.max_bytes).toBe(2 * 1_048_576);
      expect(config.discard).toBe("old");
    } finally {
      await nc.close();
    }
  });

  it("events bounds — subscribe/unsubscribe churn records the connection's burst, then its rate; the rest is counted as dropped", async () => {
    const first = uniq("evb.churn");
    const quiet = uniq("evb.quiet");
    const dropped0 = await metric(gw.metricsUrl, "fanout_events_dropped_total", { type: "subscribe" });
    const churn = await TestClient.connect(gw.wsUrl);
    const started = performance.now();
    for (let i = 0; i < 15; i++) {
      const ch = i === 0 ? first : `${first}.${i}`;
      await churn.sub(ch);
      expect((await churn.request({ op: "unsub", channel: ch })).op).toBe("ok");
    }
    const seconds = (performance.now() - started) / 1000;
    // Another socket has an allowance of its own.
    const other = await TestClient.connect(gw.wsUrl);
    await other.sub(quiet);
    churn.ws.close(1000, "done");
    other.ws.close(1000, "done");
    await churn.waitClosed();
    await other.waitClosed();
    const mine = await waitFor(async () => {
      const e = await eventsOf(first);
      return e.at(-1)?.type === "disconnect" ? e : undefined;
    });
    const subs = mine.filter((e) => e.type === "subscribe" || e.type === "unsubscribe");
    expect(mine[0]!.type).toBe("connect");
    expect(subs.length).toBeGreaterThanOrEqual(BURST);
    expect(subs.length).toBeLessThanOrEqual(BURST + Math.ceil(seconds) + 1);
    expect((await waitFor(async () => ((await eventsOf(quiet)).length === 4 ? eventsOf(quiet) : undefined))).map((e) => e.type)).toEqual([
      "connect",
      "subscribe",
      "unsubscribe",
      "disconnect",
    ]);
    const dropped =
      (await metric(gw.metricsUrl, "fanout_events_dropped_total", { type: "subscribe" })) -
      dropped0 +
      (await metric(gw.metricsUrl, "fanout_events_dropped_total", { type: "unsubscribe" }));
    expect(dropped).toBe(30 - subs.length);
  });

  it("events bounds — a client's close is recorded as the client's (by: client), the gateway's close as the gateway's (by: server)", async () => {
    const byClient = uniq("evb.byclient");
    const c = await TestClient.connect(gw.wsUrl);
    await c.sub(byClient);
    c.ws.close(4403, "account suspended by an operator");
    await c.waitClosed();
    const ev = await waitFor(async () => (await eventsOf(byClient)).find((e) => e.type === "disconnect"));
    expect(ev).toMatchObject({ by: "client", code: 4403, reason: "account suspended by an operator" });

    // The gateway closes a socket whose frame is over MAX_PAYLOAD_BYTES (64 KiB) with 1009.
    const byServer = uniq("evb.byserver");
    const s = await TestClient.connect(gw.wsUrl);
    await s.sub(byServer);
    s.ws.send("x".repeat(70_000));
    await s.waitClosed();
    const gone = await waitFor(async () => (await eventsOf(byServer)).find((e) => e.type === "disconnect"));
    expect(gone).toMatchObject({ by: "server", code: 1009, reason: "frame larger than 65536 bytes" });
  });
});
