import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.js";
import { startGateway, type GatewayHandle } from "./support/gateway.js";
import { TestClient } from "./support/ws-client.js";
import { waitFor } from "./support/wait.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;

const metric = async (name: string): Promise<number> => {
  const text = await (await fetch(`${gw.url}/metrics`)).text();
  return Number(new RegExp(`^${name} ([0-9.e+]+)`, "m").exec(text)?.[1] ?? "NaN");
};

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, args: ["--backpressure-bytes", "64KiB", "--max-backpressure-bytes", "64MiB", "--slow-consumer-timeout", "60s"] });
  nc = await connect({ servers: nats.url });
});
afterAll(async () => {
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("backpressure — a client that stops reading", () => {
  it("is taken out of live delivery, its drops are counted, the gateway's buffer stays bounded, others are unaffected", async () => {
    const slow = await TestClient.connect(gw.wsUrl);
    const fast = await TestClient.connect(gw.wsUrl);
    await slow.sub("bp.x");
    await fast.sub("bp.x");
    // Stop reading on the slow client's TCP socket: the kernel buffers fill, then the gateway's.
    (slow.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    const js = jetstream(nc);
    const payload = new TextEncoder().encode(JSON.stringify({ pad: "x".repeat(8_000) }));
    const total = 4_000; // ~32 MB: far beyond loopback socket buffers
    for (let i = 0; i < total; i += 200) {
      await Promise.all(Array.from({ length: 200 }, () => js.publish("ev.bp.x", payload)));
    }
    await fast.waitForMsgs(total, 60_000);
    expect(await metric("fanout_slow_consumer_switches_total")).toBeGreaterThanOrEqual(1);
    const rss = await metric("process_resident_memory_bytes");
    expect(rss).toBeLessThan(400 * 1024 * 1024);
    // Reading again: the slow socket drains, rejoins live delivery, and what it missed is counted.
    (slow.ws as unknown as { _socket: { resume(): void } })._socket.resume();
    await waitFor(async () => ((await metric("fanout_deliveries_dropped_total")) > 0 ? true : undefined), { what: "dropped deliveries counted", timeoutMs: 20_000 });
    const received = await waitFor(() => (slow.msgs.length > 0 ? slow.msgs.length : undefined), { what: "slow client got something" });
    expect(received).toBeLessThan(total);
    const dropped = await metric("fanout_deliveries_dropped_total");
    await js.publish("ev.bp.x", new TextEncoder().encode('{"last":true}'));
    await waitFor(() => slow.msgs.find((m) => (m.data as { last?: boolean }).last), { what: "slow client back on live delivery", timeoutMs: 20_000 });
    // Exactly accounted: what it got plus what was counted as dropped is everything published.
    expect(slow.msgs.length - 1 + dropped).toBe(total);
    expect(slow.open).toBe(true);
    slow.close();
    fast.close();
  });
});
