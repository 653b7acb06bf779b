// Catch-up at length: 100,000 stored messages replayed to one socket while publishing goes on (the long tier,
// `npm run test:long`: a real nats-server and a 2-worker gateway).
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { contiguousFrom, publishMany as fill } from "#testkit/stream-fill.js";

const publishMany = (channel: string, count: number, from = 0): Promise<number[]> => fill(js, channel, count, from);

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let js: JetStreamClient;
const clients = new ClientPool(() => gw.wsUrl);
const client = () => clients.open();
const uniq = uniqueNames();

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2 });
  nc = await connect({ servers: nats.url });
  js = jetstream(nc);
});
afterAll(async () => {
  clients.closeAll();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("replay — at length", () => {
  it("catch-up of 100k messages while publishing continues: contiguous, no duplicates, no consumer on the server", async () => {
    const ch = uniq("big.");
    const first = await publishMany(ch, 100_000);
    const c = await client();
    await c.sub(ch, { from: { seq: first[0] } });
    // Keep publishing during the catch-up.
    const extra = 10_000;
    await publishMany(ch, extra, 100_000);
    await c.waitForMsgs(100_000 + extra, 90_000);
    expect(c.msgs.length).toBe(100_000 + extra);
    expect(contiguousFrom(c.msgs, 0)).toBe(true);
    const s = c.msgs.map((m) => m.seq);
    for (let i = 1; i < s.length; i++) if (s[i]! <= s[i - 1]!) throw new Error(`seq went back at ${i}`);
    await waitFor(() => c.frames.find((f) => f.op === "live"), { what: "live marker" });
    // Catch-up reads with direct gets and live delivery is a core subscription: nothing on the server.
    const jsm = await jetstreamManager(nc);
    expect((await jsm.streams.info("FANOUT_CHANNELS")).state.consumer_count).toBe(0);
    await httpPublish(gw.url, ch, { i: 100_000 + extra });
    await c.waitForMsgs(100_000 + extra + 1);
  }, 120_000);
});
