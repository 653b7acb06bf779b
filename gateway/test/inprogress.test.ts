import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { GatewayClient, type GatewayMessage } from "../client/src/index.js";

const ACK_WAIT_MS = 1_000;
let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool(() => gw.wsUrl);
const client = () => clients.open();
const uniq = uniqueNames();
/** Resolves once `ms` have passed (a deadline polled like every other wait of the kit). */
const until = (ms: number) => {
  const end = Date.now() + ms;
  return waitFor(() => Date.now() >= end, { timeoutMs: ms + 5_000, what: `${ms} ms` });
};

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, args: ["--durable-ack-wait", `${ACK_WAIT_MS}ms`] });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
});

describe("durable — work in progress", () => {
  it("a client that sends inprogress more often than ack_wait is not redelivered to; one that does not is", async () => {
    const busy = uniq("wpi.");
    const idle = uniq("wpi.");
    const a = await client();
    const b = await client();
    await a.sub(busy, { durable: "w1", ack: true });
    await b.sub(idle, { durable: "w2", ack: true });
    await httpPublish(gw.url, busy, { job: 1 });
    await httpPublish(gw.url, idle, { job: 2 });
    const [ma] = await a.waitForMsgs(1);
    await b.waitForMsgs(1);
    // Three ack_waits long: a keeps saying it is working, b says nothing.
    const end = Date.now() + 3 * ACK_WAIT_MS;
    while (Date.now() < end) {
      expect(await a.request({ op: "inprogress", seq: ma!.seq })).toMatchObject({ op: "ok" });
      await until(ACK_WAIT_MS / 4);
    }
    expect(a.msgs).toHaveLength(1);
    const again = await b.waitForMsgs(2);
    expect(again[1]).toMatchObject({ seq: again[0]!.seq, redelivered: true, deliveries: 2 });
    expect(await a.request({ op: "ack", seq: ma!.seq })).toMatchObject({ op: "ok" });
    expect(await a.request({ op: "inprogress", seq: ma!.seq })).toMatchObject({ op: "err", code: "unknown_seq" });
  });

  it("the SDK's msg.inProgress() keeps a long handler's message from being redelivered", async () => {
    const ch = uniq("wpisdk.");
    const sdk = new GatewayClient(gw.wsUrl, { WebSocket: WebSocket as never });
    await sdk.connect();
    const seen: GatewayMessage[] = [];
    const sub = sdk.subscribe(
      ch,
      async (m) => {
        seen.push(m);
        const end = Date.now() + 3 * ACK_WAIT_MS;
        while (Date.now() < end) {
          m.inProgress();
          await until(ACK_WAIT_MS / 4);
        }
      },
      { durable: "w3", ack: true },
    );
    await sub.ready;
    await httpPublish(gw.url, ch, { job: 3 });
    await waitFor(() => seen.length === 1, { what: "the message" });
    await until(3 * ACK_WAIT_MS + ACK_WAIT_MS);
    expect(seen).toHaveLength(1); // acked by autoAck when the handler returned, never redelivered
    await sdk.close();
  });
});
