// The events feature's JetStream state on a 3-node cluster with STREAM_REPLICAS=3: the events stream, the
// webhook's lease stream and the cluster's state bucket, made with one replica as an older gateway made them
// (with one event stored and the webhook's consumer already there), and the presence bucket, made with one
// replica as before STREAM_REPLICAS was raised, are brought to 3 replicas at start with nothing lost; then the NATS node leading the lease stream is killed, and events recorded after it still
// reach a real HTTP receiver, without the node coming back.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager, type StreamInfo } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsCluster, type NatsCluster } from "#testkit/nats-cluster.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { WebhookReceiver } from "#testkit/webhook-receiver.js";
import { acceptedEvents, missing } from "#testkit/webhook-events.js";
import { ensureEventsStream, WEBHOOK_DURABLE, webhookSource } from "../../src/broker/jetstream/events-stream.js";
import { leaseNames, webhookLeaseStore } from "../../src/broker/jetstream/webhook-lease.js";
import { ensureSharedState } from "../../src/broker/jetstream/shared-state.js";
import { ensurePresenceBucket, presenceStream } from "../../src/broker/jetstream/presence.js";
import { createLogger } from "../../src/log.js";

// The defaults of EVENTS_STREAM, EVENTS_SUBJECT and EVENTS_MAX_AGE, as an older gateway had them.
const EVENTS = { stream: "FANOUT_EVENTS", subject: "fanout.events", maxAgeMs: 86_400_000 };
const LEASE = leaseNames(EVENTS).stream;
const STATE = `KV_${EVENTS.stream}_STATE`;
// The default PRESENCE_BUCKET.
const PRESENCE = presenceStream("PRESENCE");
const log = createLogger("silent", {});

let cluster: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
let receiver: WebhookReceiver;
let gw: GatewayHandle;
const sockets: TestClient[] = [];

/** The stream's info once it has 3 replicas, a leader other than `not`, and both followers caught up. */
async function replicated(name: string, not?: string): Promise<StreamInfo | undefined> {
  const si = await jsm.streams.info(name);
  const c = si.cluster;
  const ok = si.config.num_replicas === 3 && c?.leader && c.leader !== not && c.replicas?.length === 2;
  return ok && c.replicas!.every((r) => r.current || r.name === not) ? si : undefined;
}

/** Waits until every event the events stream holds has been accepted by the receiver. */
async function allArrived(what: string) {
  return waitFor(
    async () => {
      const { last_seq } = (await jsm.streams.info(EVENTS.stream)).state;
      const events = acceptedEvents(receiver);
      return last_seq > 0 && missing(events, last_seq).length === 0 ? events : undefined;
    },
    { timeoutMs: 30_000, what },
  );
}

beforeAll(async () => {
  cluster = await startNatsCluster();
  nc = await connect({ servers: cluster.urls, name: "events-replicas-test", reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  // A cluster just formed on a busy machine can take more than 5 s to create the first streams.
  jsm = await jetstreamManager(nc, { timeout: 15_000 });
  // What a gateway from before replicated events leaves behind: each asset on one node, the webhook's consumer, one stored event.
  const old = { ...EVENTS, maxBytes: -1, replicas: 1 };
  await ensureEventsStream(jsm, old, log);
  await webhookLeaseStore(jetstream(nc), jsm, old, 5_000, log);
  await ensureSharedState(jsm, { bucket: `${EVENTS.stream}_STATE`, replicas: 1, storage: "file" }, log);
  await webhookSource(jetstream(nc), jsm, EVENTS, { durable: WEBHOOK_DURABLE, maxAckPending: 100, ackWaitMs: 3_700 });
  // On a cluster just formed the new stream's leader may not answer yet ("no responders"): stored once (msgID) when it does.
  const stored = JSON.stringify({ type: "connect", time: new Date().toISOString(), client: "stored-before" });
  await waitFor(() => jetstream(nc).publish(`${EVENTS.subject}.connect`, stored, { msgID: "stored-before" }), {
    timeoutMs: 20_000,
    intervalMs: 200,
    what: "the first event stored",
  });
  // And the presence bucket of a deployment started with STREAM_REPLICAS=1.
  await ensurePresenceBucket(jsm, { bucket: "PRESENCE", replicas: 1, storage: "file" }, log);
  for (const name of [EVENTS.stream, LEASE, STATE, PRESENCE]) expect((await jsm.streams.info(name)).config.num_replicas).toBe(1);

  receiver = await WebhookReceiver.start();
  gw = await startGateway({
    natsUrl: cluster.urls,
    workers: 1,
    logLevel: "info",
    readyTimeoutMs: 60_000,
    args: ["--stream-replicas", "3", "--shutdown-timeout", "5s"],
    env: { EVENTS_WEBHOOK_URL: receiver.url, EVENTS_WEBHOOK_BACKOFF_MAX: "1s", EVENTS_WEBHOOK_TIMEOUT: "2s" },
  });
});

afterAll(async () => {
  for (const c of sockets) c.close();
  await gw?.stop("SIGKILL");
  await nc?.close();
  await cluster?.stop();
  await receiver?.down();
});

describe("events on a NATS cluster — STREAM_REPLICAS=3", () => {
  it("events — the events stream, the lease stream, the state bucket and the presence bucket made with 1 replica are brought to 3 at start, the stored event kept", async () => {
    for (const name of [EVENTS.stream, LEASE, STATE, PRESENCE])
      await waitFor(() => replicated(name), { timeoutMs: 30_000, what: `${name} on 3 caught-up replicas` });
    // The webhook's durable consumer follows its stream (it was made on the 1-replica stream).
    const consumer = await waitFor(
      async () => {
        const ci = await jsm.consumers.info(EVENTS.stream, WEBHOOK_DURABLE);
        return ci.cluster?.replicas?.length === 2 ? ci : undefined;
      },
      { timeoutMs: 30_000, what: "the webhook consumer on 3 replicas" },
    );
    expect(consumer.cluster?.leader).toBeTruthy();
    const updated = gw.logs.map((l) => l.msg).filter((m) => typeof m === "string" && m.endsWith(" updated"));
    expect(updated).toEqual(
      expect.arrayContaining(["events stream updated", "webhook lease stream updated", "shared state bucket updated", "presence bucket updated"]),
    );
    const events = await allArrived("the event stored before the update, and the gateway's own, accepted");
    expect(events.find((e) => e.id === 1)?.client).toBe("stored-before");
  });

  it("events — the NATS node leading the lease stream killed: events recorded afterwards still reach the webhook, without the node back", async () => {
    const c1 = await TestClient.connect(gw.wsUrl);
    sockets.push(c1);
    await c1.sub("evr.before");
    await allArrived("the events before the kill accepted");

    const leader = (await jsm.streams.info(LEASE)).cluster!.leader!;
    const node = cluster.nodes.find((n) => n.name === leader)!;
    expect(node).toBeDefined();
    await node.kill();
    const killedAt = Date.now();
    // The lease, the events, the state and the channels' stream move to the two nodes left, each with a
    // leader there, and the gateway's worker is connected again (readiness, not a delay).
    for (const name of [LEASE, EVENTS.stream, STATE, PRESENCE, "FANOUT_CHANNELS"])
      await waitFor(() => replicated(name, leader), { timeoutMs: 30_000, what: `${name} led by a node left` });
    await waitFor(async () => (await fetch(`${gw.url}/readyz`)).ok, { timeoutMs: 30_000, what: "the gateway ready again" });
    const readyAt = Date.now();

    const c2 = await TestClient.connect(gw.wsUrl);
    sockets.push(c2);
    await c2.sub("evr.after");
    const arrived = await waitFor(() => acceptedEvents(receiver).find((e) => e.channel === "evr.after" && e.type === "subscribe"), {
      timeoutMs: 30_000,
      what: "the subscribe recorded after the kill accepted",
    });
    console.info(
      `events webhook, lease-stream leader ${leader} killed: streams led elsewhere and gateway ready ${readyAt - killedAt} ms after the kill, the next event accepted ${arrived.at - readyAt} ms later`,
    );
    await allArrived("every stored event accepted after the kill");
    expect(node.running).toBe(false);
  });
});
