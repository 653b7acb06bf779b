// Publishes the stream never acknowledges (a subject no stream takes, with a core subscriber on it, so NATS
// answers no "no responders" either): HTTP answers 502 broker_error, and the worker warns once, naming the
// stream, the subject and what JetStream says of the stream (broker/jetstream/ack-timeouts.ts).
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let gw: GatewayHandle;

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    logLevel: "info",
    env: { STREAM_NAME: "QUIET", SUBJECT_PREFIX: "qt", STREAM_REPAIR: "report", STREAM_CHECK_INTERVAL: "1h" },
  });
});
afterAll(async () => {
  await gw?.stop();
  await nc?.close();
  await nats?.stop();
});

describe("publish ack timeouts — said in the log with the stream and subject", () => {
  it("a stream that no longer takes the channel's subject: 502 broker_error, and one warning naming QUIET, the subject and its subjects", async () => {
    expect((await httpPublish(gw.url, "q.a", { n: 1 })).status).toBe(201);
    const info = await jsm.streams.info("QUIET");
    await jsm.streams.update("QUIET", { ...info.config, subjects: ["elsewhere.>"] });
    nc.subscribe("qt.q.a"); // an interest that never answers: the publish waits for its ack
    await nc.flush();
    const from = gw.logs.length;
    const r = await httpPublish(gw.url, "q.a", { n: 2 });
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ error: "broker_error", temporary: true });
    const line = await waitFor(() => gw.logs.slice(from).find((l) => l.msg?.startsWith("publishes got no acknowledgement")), { what: "ack-timeout warning" });
    expect(line).toMatchObject({
      level: 40,
      stream: "QUIET",
      subject: "qt.q.a",
      timedOut: 1,
      streamFound: true,
      streamSubjects: ["elsewhere.>"],
      ackReplyOpen: true,
      ackReplyRoundTrip: true,
    });
  });
});
