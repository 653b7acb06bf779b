// A durable subscription across a change of its JetStream consumer's leader (a node killed, a step-down),
// while the gateway's own NATS connection stays up. Found by the chaos run (npm run chaos, seed 9,
// --kinds nats-kill): durables waited up to 32.7 s for messages after node kills while WebSocket and SSE
// subscribers waited under 0.5 s. The pull request the old leader held is gone, and nats.js only pulls
// again after two missed idle heartbeats (half the pull's expiry, 30 s by default).
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsCluster, type NatsCluster } from "#testkit/nats-cluster.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

const STREAM = "FANOUT_CHANNELS";
let cluster: NatsCluster;
let nc: NatsConnection;
let jsm: JetStreamManager;
let gw: GatewayHandle;
const sockets: TestClient[] = [];

beforeAll(async () => {
  cluster = await startNatsCluster();
  nc = await connect({ servers: cluster.urls, name: "durable-leader-test", reconnectTimeWait: 100, maxReconnectAttempts: -1 });
  jsm = await jetstreamManager(nc, { timeout: 5_000 });
  gw = await startGateway({ natsUrl: cluster.urls, workers: 1, logLevel: "info", args: ["--stream-replicas", "3", "--shutdown-timeout", "5s"] });
});

afterAll(async () => {
  for (const c of sockets) c.close();
  await gw?.stop();
  await nc?.close();
  await cluster?.stop();
});

describe("durable on an R3 stream — consumer leader change", () => {
  it("durable — after its consumer's leader steps down, the next message arrives within 10 s (not after nats.js' 30 s pull expiry)", async () => {
    const channel = "dleader.a";
    const c = await TestClient.connect(gw.wsUrl);
    sockets.push(c);
    await c.sub(channel, { durable: "dl1", ack: true });
    expect((await httpPublish(gw.url, channel, { n: 1 })).status).toBe(201);
    const [first] = await c.waitForMsgs(1);
    c.sendRaw(JSON.stringify({ op: "ack", seq: first!.seq }));

    const name = await waitFor(
      async () => {
        for await (const ci of jsm.consumers.list(STREAM)) if (ci.config.durable_name?.endsWith("_dl1")) return ci.name;
        return undefined;
      },
      { what: "the durable's consumer" },
    );
    const leader = (await jsm.consumers.info(STREAM, name)).cluster?.leader;
    expect(leader).toBeTruthy();
    await nc.request(`$JS.API.CONSUMER.LEADER.STEPDOWN.${STREAM}.${name}`, undefined, { timeout: 5_000 });
    await waitFor(
      async () => {
        const l = (await jsm.consumers.info(STREAM, name)).cluster?.leader;
        return l && l !== leader;
      },
      { timeoutMs: 15_000, what: "a new consumer leader" },
    );

    expect((await httpPublish(gw.url, channel, { n: 2 })).status).toBe(201);
    const msgs = await c.waitForMsgs(2, 10_000);
    expect(msgs.map((m) => (m.data as { n: number }).n)).toEqual([1, 2]);
  }, 60_000);
});
