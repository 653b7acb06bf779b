import { connect as tcpConnect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, logLevel: "info", args: ["--idle-timeout", "8s"] });
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

/** A WebSocket that completes the handshake, then never answers anything (no pongs): a dead peer. */
async function silentSocket(port: number): Promise<{ socket: Socket; closedAt: Promise<number> }> {
  const socket = tcpConnect(port, "127.0.0.1");
  let head = "";
  await new Promise<void>((resolve, reject) => {
    socket.once("error", reject);
    socket.on("data", (d: Buffer) => {
      head += d.toString("latin1");
      if (head.includes("\r\n\r\n")) resolve();
    });
    socket.write(
      `GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`,
    );
  });
  expect(head).toMatch(/^HTTP\/1\.1 101/);
  const closedAt = new Promise<number>((r) => socket.once("close", () => r(Date.now())));
  return { socket, closedAt };
}

describe("limits — idle timeout with pings", () => {
  it("a peer that answers no ping is closed after IDLE_TIMEOUT; a live client (auto pong) stays", async () => {
    const live = await TestClient.connect(gw.wsUrl);
    const t0 = Date.now();
    const dead = await silentSocket(gw.port);
    const closedAt = await dead.closedAt;
    expect(closedAt - t0).toBeGreaterThanOrEqual(7_000);
    expect(closedAt - t0).toBeLessThan(20_000);
    expect(live.open).toBe(true);
    expect((await live.request({ op: "ping" })).op).toBe("pong");
    // recovering: the same address connects again at once
    const again = await TestClient.connect(gw.wsUrl);
    await waitFor(() => again.open, { what: "reconnect" });
    live.close();
    again.close();
  }, 30_000);
});
