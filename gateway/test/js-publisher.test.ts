// JetStream publishes on the core connection with one reply subscription (broker/jetstream/publisher.ts), against a
// real nats-server: acks, dedup, the server's refusals, no responders, timeouts.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JsPublisher } from "../src/broker/jetstream/publisher.js";
import { brokerFailure, GatewayError } from "../src/errors.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let pub: JsPublisher;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: "JSPUB", subjects: ["jspub.>"], max_msg_size: 64, duplicate_window: 60_000_000_000 });
  pub = new JsPublisher(nc, 400);
});
afterAll(async () => {
  pub?.close();
  await nc?.close();
  await nats?.stop();
});

describe("js publisher — JetStream publishes without a request per message", () => {
  it("js publisher — acks with increasing seqs in publish order; a repeated msgId answers duplicate with the first seq", async () => {
    const acks = await Promise.all(Array.from({ length: 200 }, (_, i) => pub.publish("jspub.a", new TextEncoder().encode(`{"i":${i}}`))));
    const seqs = acks.map((a) => a.seq);
    expect(seqs).toEqual(Array.from({ length: 200 }, (_, i) => seqs[0]! + i));
    const first = await pub.publish("jspub.a", new TextEncoder().encode("1"), "same-id");
    expect(await pub.publish("jspub.a", new TextEncoder().encode("1"), "same-id")).toEqual({ seq: first.seq, duplicate: true });
    expect(pub.inFlight).toBe(0);
  });

  it("js publisher — the server's refusal is a permanent broker_error; no stream and no answer are plain errors the service maps by connection state", async () => {
    const refused = await pub.publish("jspub.big", new Uint8Array(100)).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(GatewayError);
    expect(refused).toMatchObject({ code: "broker_error", temporary: false, message: expect.stringContaining("publish failed") });
    const noStream = await pub.publish("nostream.x", new Uint8Array(1)).catch((e: unknown) => e);
    expect(brokerFailure(noStream, true, "publish")).toMatchObject({ code: "broker_error", temporary: true });
    // a core subscriber that never answers: the publish times out (400 ms here) and is forgotten
    const silent = nc.subscribe("silent.x");
    const t0 = Date.now();
    const timedOut = await pub.publish("silent.x", new Uint8Array(1)).catch((e: unknown) => e);
    expect((timedOut as Error).message).toContain("no acknowledgement within 400 ms");
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect(brokerFailure(timedOut, false, "publish")).toMatchObject({ code: "broker_unavailable" });
    expect(pub.inFlight).toBe(0);
    silent.unsubscribe();
  });
});
