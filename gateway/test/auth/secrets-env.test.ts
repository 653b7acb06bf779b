// Secret settings never reach a worker's environment (/proc/<pid>/environ is readable by the same user):
// the primary sends them over IPC. A real gateway with two workers.
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { AUDIENCE, connect, ISSUER, refusal, SECRET, sign } from "#testkit/auth.js";

const API_KEY = "secret-env-api-key-0123456789";
let nats: NatsServerHandle;
let gw: GatewayHandle;

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: API_KEY } });
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

describe("auth — secrets stay out of the workers' environment", () => {
  it("no worker's /proc environ holds the JWT secret or an API key; tokens and keys still work", async () => {
    const workers = await childPids(gw.process.pid!);
    expect(workers).toHaveLength(2);
    for (const pid of workers) {
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8");
      expect(environ).toContain("FGW_WORKER_CONFIG"); // the environ read is the worker's
      expect(environ).not.toContain(SECRET);
      expect(environ).not.toContain(API_KEY);
    }
    const c = await connect(gw.wsUrl, { headers: { authorization: `Bearer ${await sign({ channels: { sub: ["s.>"] } })}` } });
    expect(await c.request({ op: "sub", channel: "s.x" })).toMatchObject({ op: "ok" });
    c.close();
    expect((await refusal(gw.wsUrl, { headers: { authorization: "Bearer not.a.token" } })).status).toBe(401);
    expect((await httpPublish(gw.url, "s.x", { n: 1 }, { "x-api-key": API_KEY })).status).toBe(201);
  });
});
