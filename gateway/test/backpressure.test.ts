import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { TestClient } from "#testkit/ws-client.js";
import { metric } from "#testkit/metrics.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;

type Sock = { _socket: { pause(): void; resume(): void } };

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    args: ["--backpressure-bytes", "64KiB", "--max-backpressure-bytes", "64MiB", "--slow-consumer-timeout", "60s"],
  });
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("backpressure — a client that stops reading (JetStream: lossless)", () => {
  it("stops reading for 5 s under steady load, then reads again: receives everything once, in order; memory stays bounded", async () => {
    const slow = await TestClient.connect(gw.wsUrl);
    const fast = await TestClient.connect(gw.wsUrl);
    await slow.sub("bp.x");
    await fast.sub("bp.x");
    const rssBefore = await metric(gw.url, "process_resident_memory_bytes");
    (slow.ws as unknown as Sock)._socket.pause();
    const js = jetstream(nc);
    const payload = new TextEncoder().encode(JSON.stringify({ pad: "x".repeat(4_000) }));
    // Steady load: 100 messages every 20 ms for 6 s (~30,000 messages, ~120 MB), far past socket buffers.
    const t0 = Date.now();
    let total = 0;
    let resumed = false;
    let maxRss = 0;
    for (let tick = 0; tick < 300 && Date.now() - t0 < 20_000; tick++) {
      await Promise.all(Array.from({ length: 100 }, () => js.publish("ev.bp.x", payload)));
      total += 100;
      if (!resumed && Date.now() - t0 >= 5_000) {
        resumed = true;
        maxRss = Math.max(maxRss, await metric(gw.url, "process_resident_memory_bytes"));
        (slow.ws as unknown as Sock)._socket.resume();
      }
      if (Date.now() - t0 >= 6_000) break;
      await new Promise((r) => setTimeout(r, 20)); // the publish pacing of the scenario, not a readiness wait
    }
    await fast.waitForMsgs(total, 60_000);
    await slow.waitForMsgs(total, 60_000);
    expect(await metric(gw.url, "fanout_slow_consumer_switches_total")).toBeGreaterThanOrEqual(1);
    expect(await metric(gw.url, "fanout_deliveries_dropped_total")).toBe(0);
    const seqs = slow.msgs.map((m) => m.seq);
    expect(seqs.length).toBe(total);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe(seqs[i - 1]! + 1);
    expect(fast.msgs.map((m) => m.seq)).toEqual(seqs);
    // ~120 MB went through while the client was stuck; the gateway held only a bounded part of it.
    expect(maxRss - rssBefore).toBeLessThan(100 * 1024 * 1024);
    expect(slow.open).toBe(true);
    slow.close();
    fast.close();
  });
});
