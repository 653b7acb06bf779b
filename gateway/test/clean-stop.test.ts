// A clean stop is quiet: the real CLI, with live subscriptions, stopped with SIGTERM while the stream's leader
// advisories keep arriving (each one makes a worker read the stream's state), logs no warning. It used to log
// "stream state unavailable" with a DrainingConnectionError stack for a read its own drain had cut.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { TestClient } from "#testkit/ws-client.js";

let nats: NatsServerHandle | undefined;
let gw: GatewayHandle | undefined;
let nc: NatsConnection | undefined;
afterAll(async () => {
  await gw?.stop("SIGKILL");
  await nc?.close();
  await nats?.stop();
});

describe("clean stop — SIGTERM logs no warning", () => {
  it("clean stop — workers draining while stream advisories arrive log nothing at warn or above", async () => {
    nats = await startNatsServer();
    gw = await startGateway({ natsUrl: nats.url, workers: 2, logLevel: "info" });
    nc = await connect({ servers: nats.url });
    const clients = await Promise.all([0, 1, 2, 3].map(() => TestClient.connect(gw!.wsUrl)));
    await Promise.all(clients.map((c, i) => c.sub(`stop.${i}`)));
    const from = gw.logs.length;
    // Leader advisories of the stream, sent on and on until the gateway has exited.
    let exited = false;
    const advisories = (async () => {
      while (!exited) {
        nc!.publish("$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.FANOUT_CHANNELS", JSON.stringify({ stream: "FANOUT_CHANNELS" }));
        await nc!.flush();
      }
    })();
    const code = await gw.stop("SIGTERM");
    exited = true;
    await advisories;
    expect(code).toBe(0);
    const noisy = gw.logs.slice(from).filter((l) => (l.level ?? 0) >= 40);
    expect(noisy).toEqual([]);
    expect(gw.logs.slice(from).some((l) => l.msg === "stopped")).toBe(true);
  });
});
