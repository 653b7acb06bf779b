// The ordered webhook when a previous sender's events are still out with the consumer as the next one takes
// its turn, against a real nats-server, real gateways and a real HTTP receiver. A sender that stops hands its
// batch back, and one that dies has it given back after the ack wait; but a hand-back lives in the consumer
// leader's memory only, and a leader that changes (a NATS node killed or paused, as the chaos run does)
// forgets it: the batch then comes back only after the ack wait, and the new holder's first pull could bring
// later events first. Here a raw JetStream client takes two events from the durable consumer and never answers
// for them (what such a forgotten batch looks like); the gateway that takes the turn next must send them first.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { TestClient } from "#testkit/ws-client.js";
import { uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { WebhookReceiver } from "#testkit/webhook-receiver.js";
import { acceptedEvents, missing, streamSeqs } from "#testkit/webhook-events.js";

let nats: NatsServerHandle;
let receiver: WebhookReceiver;
let raw: NatsConnection;
const gateways: GatewayHandle[] = [];
const sockets: TestClient[] = [];
const uniq = uniqueNames();

const sender = async (): Promise<GatewayHandle> => {
  const gw = await startGateway({ natsUrl: nats.url, workers: 1, env: { EVENTS_WEBHOOK_URL: receiver.url, EVENTS_WEBHOOK_BATCH: "5" } });
  gateways.push(gw);
  return gw;
};

/** A socket on `gw` that subscribes to and leaves `ch` `times` times: two events each. */
async function churn(gw: GatewayHandle, ch: string, times: number): Promise<void> {
  const c = await TestClient.connect(gw.wsUrl);
  sockets.push(c);
  for (let i = 0; i < times; i++) {
    await c.sub(ch);
    expect((await c.request({ op: "unsub", channel: ch })).op).toBe("ok");
  }
}

async function allArrived(what: string) {
  const { last } = await streamSeqs(nats.url);
  return waitFor(() => (missing(acceptedEvents(receiver), last).length === 0 ? acceptedEvents(receiver) : undefined), { timeoutMs: 30_000, what });
}

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  nats = await startNatsServer();
  raw = await connect({ servers: nats.url });
});
afterAll(async () => {
  for (const c of sockets) c.close();
  for (const gw of gateways) await gw.stop("SIGKILL");
  await raw?.close();
  await nats?.stop();
  await receiver?.down();
});

describe("events — the next sender waits for events still out with the consumer", () => {
  it("events — two events taken by a sender that never answers for them reach the webhook before every later one", async () => {
    // A first sender makes the durable consumer, sends what there is, and stops (its turn released).
    const first = await sender();
    await churn(first, uniq("ev.pending0"), 1);
    await allArrived("the first sender's events");
    expect(await first.stop()).toBe(0);
    // Events recorded by an instance that sends none.
    const recorder = await startGateway({ natsUrl: nats.url, workers: 1, env: { EVENTS: "all" } });
    gateways.push(recorder);
    const ch = uniq("ev.pending1");
    await churn(recorder, ch, 2);
    // The forgotten batch: two events out with a reader that never acknowledges nor hands them back.
    const taken = await jetstream(raw).consumers.get("FANOUT_EVENTS", "fanout-webhook");
    const held: number[] = [];
    for await (const m of await taken.fetch({ max_messages: 2, expires: 2_000 })) held.push(m.seq);
    expect(held).toHaveLength(2);
    await churn(recorder, ch, 2);
    const before = receiver.requests.length;
    await sender();
    await allArrived("every event, the two held ones among them");
    const sent = receiver.requests
      .slice(before)
      .filter((r) => r.status < 300)
      .flatMap((r) => (JSON.parse(r.body) as { events: { id: number }[] }).events.map((e) => e.id));
    const after = sent.filter((id, i) => sent.indexOf(id) === i);
    // Every event the new sender sent, first arrivals, in stream order, starting with the two held ones.
    expect(after.slice(0, 2)).toEqual(held);
    expect(after).toEqual([...after].sort((x, y) => x - y));
  });
});
