// A plain GET /ws (no upgrade) answers what the upgrade would: the SDKs ask it after an attempt that never
// opened, since a WebSocket API does not show a refused upgrade's answer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { AUDIENCE, ISSUER, SECRET, connect, refusal, sign } from "#testkit/auth.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
const APP = "https://app.test";

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    logLevel: "info",
    env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, ALLOWED_ORIGINS: APP },
  });
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

const probe = async (query = "", headers: Record<string, string> = {}, method = "GET") => {
  const r = await fetch(`${gw.url}/ws${query}`, { method, headers });
  const text = await r.text();
  return { status: r.status, headers: r.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
};
const ALL = { channels: { sub: [">"] } };

describe("ws probe — GET /ws without an upgrade answers as the upgrade would", () => {
  it("ws probe — no token, an expired one (header or ?token=): 401 unauthorized, not temporary, as the upgrade answers", async () => {
    const expired = await sign(ALL, { exp: Math.floor(Date.now() / 1000) - 60 });
    const none = await probe();
    expect(none).toMatchObject({ status: 401, body: { error: "unauthorized", temporary: false } });
    expect(none.headers.get("www-authenticate")).toContain("Bearer");
    for (const r of [await probe("", { authorization: `Bearer ${expired}` }), await probe(`?coalesce=1&token=${expired}`)])
      expect(r).toMatchObject({ status: 401, body: { error: "unauthorized", message: "token has expired", temporary: false } });
    const upgrade = await refusal(`${gw.wsUrl}?token=${expired}`);
    expect(upgrade.status).toBe(401);
    expect(JSON.parse(upgrade.body)).toEqual((await probe(`?token=${expired}`)).body);
  });

  it("ws probe — a token the upgrade lets in: 426 with Upgrade: websocket, and the upgrade itself still opens", async () => {
    const token = await sign(ALL);
    const r = await probe("?coalesce=1", { authorization: `Bearer ${token}` });
    expect(r).toMatchObject({ status: 426, body: { error: "bad_request", temporary: false } });
    expect(r.headers.get("upgrade")).toBe("websocket");
    const ws = await connect(gw.wsUrl, { protocols: ["fanout.v1", `bearer.${token}`] });
    ws.close();
  });

  it("ws probe — CORS: every answer names the page's origin; an origin ALLOWED_ORIGINS does not list is 403 forbidden", async () => {
    const token = await sign(ALL);
    const allowed = await probe("", { authorization: `Bearer ${token}`, origin: APP });
    expect(allowed.status).toBe(426);
    expect(allowed.headers.get("access-control-allow-origin")).toBe(APP);
    const other = await probe("", { authorization: `Bearer ${token}`, origin: "https://other.test" });
    expect(other).toMatchObject({ status: 403, body: { error: "forbidden", temporary: false } });
    expect(other.headers.get("access-control-allow-origin")).toBe("https://other.test");
  });

  it("ws probe — OPTIONS /ws grants the preflight for Authorization to an allowed origin only", async () => {
    const ask = { origin: APP, "access-control-request-method": "GET", "access-control-request-headers": "authorization" };
    const granted = await probe("", ask, "OPTIONS");
    expect(granted.status).toBe(204);
    expect(granted.headers.get("access-control-allow-origin")).toBe(APP);
    expect(granted.headers.get("access-control-allow-headers")).toBe("authorization");
    const denied = await probe("", { ...ask, origin: "https://other.test" }, "OPTIONS");
    expect(denied.status).toBe(204);
    expect(denied.headers.get("access-control-allow-origin")).toBeNull();
  });
});
