// The doors fuzz target, a short run: random tokens, permissions and hook answers at every door of a real
// gateway; no door answers more than the WebSocket sub (reads) or pub (writes) would. `npm run fuzz -- --doors N`
// runs it longer.
import fc from "fast-check";
import { afterAll, beforeAll, describe, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "../support/nats-server.js";
import { startGateway, type GatewayHandle } from "../support/gateway.js";
import { HookBackend } from "../support/hook-backend.js";
import { doorCase, runDoorCase, type DoorFuzzTarget } from "../support/door-fuzz.js";
import { AUDIENCE, ISSUER, SECRET } from "../auth/support.js";

const API_KEY = "fuzz-doors-api-key-0123456789";
let nats: NatsServerHandle;
let gw: GatewayHandle;
let hooks: HookBackend;
let target: DoorFuzzTarget;

beforeAll(async () => {
  hooks = await HookBackend.start();
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: {
      JWT_SECRET: SECRET,
      JWT_ISSUER: ISSUER,
      JWT_AUDIENCE: AUDIENCE,
      API_KEYS: API_KEY,
      CONNECT_HOOK_URL: hooks.url("/connect"),
      SUBSCRIBE_HOOK_URL: hooks.url("/subscribe"),
      HOOK_CACHE_TTL: "1m",
      FRAME_RATE: "-1",
      CONNECT_RATE_PER_IP: "-1",
    },
  });
  target = { url: gw.url, wsUrl: gw.wsUrl, hooks, secret: SECRET, issuer: ISSUER, audience: AUDIENCE, apiKey: API_KEY };
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
  await hooks?.stop();
});

describe("fuzz — doors", () => {
  it("no door answers more than the WebSocket sub or pub of the same credentials and hook answers", async () => {
    await fc.assert(
      fc.asyncProperty(doorCase, (c) => runDoorCase(target, c).then(() => undefined)),
      { numRuns: 60, endOnFailure: true },
    );
  });
});
