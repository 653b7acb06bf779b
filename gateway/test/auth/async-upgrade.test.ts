// Regression: with uWS.js 20.51, an upgrade completed inside res.cork after the asynchronous token check was
// sometimes shut right after open (the client saw 1006, or no reply to its first frame): cork() took the new
// WebSocket for the HTTP socket it had been and read stray memory as "Connection: close" (uWebSockets #1928).
// How often depended on the heap of the worker, so several fresh gateways are asked, each with a few sockets.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway } from "#testkit/gateway.js";
import { ClientPool } from "#testkit/clients.js";
import { connect, sign, SECRET } from "#testkit/auth.js";

let nats: NatsServerHandle;
const clients = new ClientPool();
beforeAll(async () => {
  nats = await startNatsServer();
});
afterAll(async () => {
  clients.closeAll();
  await nats?.stop();
});

describe("auth — the upgrade after the asynchronous token check", () => {
  it("every socket of fresh gateways answers its first frame and stays open; no cork warning reaches stderr", async () => {
    const token = await sign({ channels: { sub: [">"] } });
    for (let g = 0; g < 3; g++) {
      const gw = await startGateway({ natsUrl: nats.url, workers: 1, logLevel: "info", env: { JWT_SECRET: SECRET } });
      try {
        const sockets = [];
        for (let i = 0; i < 6; i++) {
          const c = clients.track(await connect(gw.wsUrl, { headers: { authorization: `Bearer ${token}` } }));
          expect((await c.request({ op: "ping" }, 5_000)).op, `gateway ${g}, socket ${i}`).toBe("pong");
          sockets.push(c);
        }
        expect(sockets.every((c) => c.open)).toBe(true);
        expect(gw.stderr()).not.toMatch(/corked callback/);
        for (const c of sockets) c.close();
      } finally {
        await gw.stop();
      }
    }
  });
});
