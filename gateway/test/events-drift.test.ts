// The events feature's own streams drifting at run time (broker/jetstream/stream-watch.ts keeps them beside the
// channel streams), against a real nats-server and real gateways: a deleted events stream is made again with
// the webhook's consumer, and events keep reaching the webhook; a deleted lease stream, or a state bucket
// changed under the gateway, is reported (/readyz 503 naming it, the metric) without STREAM_REPAIR=repair.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { metric } from "#testkit/metrics.js";
import { WebhookReceiver } from "#testkit/webhook-receiver.js";
import { acceptedEvents } from "#testkit/webhook-events.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let receiver: WebhookReceiver;
let repairing: GatewayHandle;
let reporting: GatewayHandle;

/** A gateway with every kind of event on (the state bucket), a webhook sender in order (the lease stream), and its own names. */
const gateway = (name: string, repair: string, interval: string) =>
  startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: {
      STREAM_NAME: `CH_${name}`,
      SUBJECT_PREFIX: `ch${name.toLowerCase()}`,
      PRESENCE_BUCKET: `PRES_${name}`,
      EVENTS: "all",
      EVENTS_STREAM: `EV_${name}`,
      EVENTS_SUBJECT: `ev${name.toLowerCase()}`,
      EVENTS_WEBHOOK_URL: receiver.url,
      EVENTS_WEBHOOK_BACKOFF_MAX: "1s",
      STREAM_CHECK_INTERVAL: interval,
      STREAM_REPAIR: repair,
    },
  });

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  // an hour between looks for the reporting one: what it sees, it sees by JetStream's advisories
  [repairing, reporting] = await Promise.all([gateway("A", "repair", "300ms"), gateway("B", "report", "1h")]);
});
afterAll(async () => {
  await Promise.all([repairing?.stop(), reporting?.stop()]);
  await nc?.close();
  await nats?.stop();
  await receiver?.down();
});

const readyz = async (gw: GatewayHandle) => {
  const r = await fetch(`${gw.url}/readyz`);
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};
const logged = (gw: GatewayHandle, msg: string, from: number) => gw.logs.slice(from).filter((l) => l.msg === msg);
/** Connects and closes a socket on `gw`: its connect event is recorded in that gateway's events stream. */
const connectOnce = async (gw: GatewayHandle): Promise<void> => {
  const c = await TestClient.connect(gw.wsUrl);
  c.ws.close(1000, "bye");
  await c.waitClosed();
};

describe("events drift — the events feature's streams are kept by the stream watch", () => {
  it("events drift — a deleted events stream is made again with the webhook's consumer: events recorded after it reach the webhook", async () => {
    const from = repairing.logs.length;
    await jsm.streams.delete("EV_A");
    const repaired = await waitFor(() => logged(repairing, "stream setup drifted and was repaired", from)[0], { what: "repair" });
    expect(repaired).toMatchObject({ streams: ["EV_A"], drift: ["events_stream_missing"], left: [] });
    expect((await jsm.consumers.info("EV_A", "fanout-webhook")).config.durable_name).toBe("fanout-webhook");
    const before = acceptedEvents(receiver).length;
    await connectOnce(repairing);
    await waitFor(
      () =>
        acceptedEvents(receiver)
          .slice(before)
          .some((e) => e.type === "disconnect") || undefined,
      { timeoutMs: 20_000, what: "events after" },
    );
    expect((await readyz(repairing)).status).toBe(200);
  });

  it("events drift — a deleted webhook lease stream and a deleted state bucket are made again", async () => {
    const from = repairing.logs.length;
    await jsm.streams.delete("EV_A_SENDER");
    await waitFor(() => logged(repairing, "stream setup drifted and was repaired", from)[0], { what: "lease repaired" });
    expect((await jsm.streams.info("EV_A_SENDER")).config.max_msgs_per_subject).toBe(1);
    const at = repairing.logs.length;
    await jsm.streams.delete("KV_EV_A_STATE");
    const r = await waitFor(() => logged(repairing, "stream setup drifted and was repaired", at)[0], { what: "bucket repaired" });
    expect(r).toMatchObject({ streams: ["KV_EV_A_STATE"], drift: ["state_bucket_missing"] });
    expect((await jsm.streams.info("KV_EV_A_STATE")).config.name).toBe("KV_EV_A_STATE");
  });

  it("events drift — STREAM_REPAIR=report: a deleted lease stream makes /readyz 503 naming it and sets the metric, and is left as it is", async () => {
    await jsm.streams.delete("EV_B_SENDER");
    const r = await waitFor(
      async () => {
        const x = await readyz(reporting);
        return x.status === 503 ? x : undefined;
      },
      { what: "readyz 503" },
    );
    expect(r.body).toMatchObject({ ready: false, stream: { drift: ["webhook_lease_missing"] } });
    expect(await metric(reporting.metricsUrl, "fanout_stream_drift", { what: "webhook_lease_missing" })).toBe(1);
    await expect(jsm.streams.info("EV_B_SENDER")).rejects.toThrow();
    expect(reporting.logs.filter((l) => l.msg?.startsWith("the stream's setup drifted"))).toHaveLength(1);
  });
});
