// The receiver down for 12 s while events keep coming, then back, against a real nats-server, a real gateway
// and a real HTTP receiver: for 6 s it reads each request and closes the connection without an answer, for
// 6 s it refuses connections. Every event stored meanwhile arrives afterwards, none lost, in stream order,
// and every repeat carries the same id and the same event. The outage is measured in the sender's own timers,
// not in seconds: EVENTS_WEBHOOK_BACKOFF_MAX is 500 ms, so each half spans a dozen capped retries, and over
// two of the batch's ack waits (2.5 s at the default EVENTS_WEBHOOK_TAKEOVER), which the sender must keep
// extending while it retries.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { TestClient } from "#testkit/ws-client.js";
import { uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { metric } from "#testkit/metrics.js";
import { WebhookReceiver } from "#testkit/webhook-receiver.js";
import { acceptedEvents, firstArrivals, missing, streamSeqs } from "#testkit/webhook-events.js";

const HALF_OUTAGE_MS = 6_000;

let nats: NatsServerHandle;
let gw: GatewayHandle;
let receiver: WebhookReceiver;
const uniq = uniqueNames();

/** The scenario's clock: the receiver stays in its state this long (this is the outage, not a wait for readiness). */
const outage = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A socket's life (connect, subscribe, unsubscribe, close) every 100 ms on a channel of its own, until stopped. */
function keepRecording(): { stop(): Promise<number> } {
  let lives = 0;
  let running = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(async () => {
      const ch = uniq("ev.outage");
      const c = await TestClient.connect(gw.wsUrl);
      await c.sub(ch);
      await c.request({ op: "unsub", channel: ch });
      c.ws.close(1000, "bye");
      await c.waitClosed();
      lives++;
    });
  }, 100);
  return {
    async stop() {
      clearInterval(timer);
      await running;
      return lives;
    },
  };
}

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    // The sockets' kinds only: four events a life, whatever the cluster-wide kinds' timing.
    env: {
      EVENTS: "connect,disconnect,subscribe,unsubscribe",
      EVENTS_WEBHOOK_URL: receiver.url,
      EVENTS_WEBHOOK_BACKOFF_MAX: "500ms",
      EVENTS_WEBHOOK_TIMEOUT: "2s",
      EVENTS_WEBHOOK_BATCH: "20",
    },
  });
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
  await receiver?.down();
});

describe("events — a 12 s webhook outage", () => {
  it("events — the receiver hanging up for 6 s, then refusing connections for 6 s, while events keep coming: afterwards every event arrives once accepted, in order, repeats identical", async () => {
    const producer = keepRecording();
    await waitFor(() => acceptedEvents(receiver).length >= 8, { timeoutMs: 20_000, what: "events arriving before the outage" });
    const before = await streamSeqs(nats.url);

    receiver.hangUp = true;
    await outage(HALF_OUTAGE_MS);
    await receiver.down();
    await outage(HALF_OUTAGE_MS);
    const during = await streamSeqs(nats.url);
    receiver.hangUp = false;
    await receiver.up();
    const lives = await producer.stop();

    // Events kept being recorded all along (a life is 4 events): up to 40 a second for 12 s.
    expect(during.last - before.last).toBeGreaterThan(100);
    const { first, last } = await streamSeqs(nats.url);
    expect(first).toBe(1);
    expect(last).toBe(4 * lives);
    const events = await waitFor(() => (missing(acceptedEvents(receiver), last).length === 0 ? acceptedEvents(receiver) : undefined), {
      timeoutMs: 30_000,
      what: `all ${last} events accepted`,
    });
    // In stream order, and none accepted twice (one sender, nothing handed over).
    const ids = firstArrivals(events).map((e) => e.id);
    expect(ids).toEqual(Array.from({ length: last }, (_, i) => i + 1));
    expect(events).toHaveLength(last);
    // Every request the receiver hung up on was sent again: same ids, same events, byte for byte.
    const hungUp = receiver.requests.filter((r) => r.status === 0);
    expect(hungUp.length).toBeGreaterThanOrEqual(2);
    const acceptedById = new Map(
      receiver.requests
        .filter((r) => r.status === 200)
        .flatMap((r) => (JSON.parse(r.body) as { events: { id: number }[] }).events.map((e) => [e.id, JSON.stringify(e)] as const)),
    );
    for (const r of hungUp) for (const e of (JSON.parse(r.body) as { events: { id: number }[] }).events) expect(acceptedById.get(e.id)).toBe(JSON.stringify(e));
    await waitFor(async () => (await metric(gw.metricsUrl, "fanout_webhook_pending")) === 0, { timeoutMs: 20_000, what: "nothing pending" });
    expect(await metric(gw.metricsUrl, "fanout_webhook_dropped_total")).toBe(0);
  }, 150_000);
});
