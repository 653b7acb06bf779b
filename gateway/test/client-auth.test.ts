import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient, type GatewayEvent } from "../client/src/index.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { waitFor } from "#testkit/wait.js";
import { AUDIENCE, ISSUER, SECRET, sign } from "#testkit/auth.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients: GatewayClient[] = [];
const ALL = { channels: { sub: [">"], pub: [">"] } };

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    logLevel: "info",
    env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, JWT_CLOCK_TOLERANCE: "0s" },
  });
});
afterAll(async () => {
  for (const c of clients) await c.close();
  await gw?.stop();
  await nats?.stop();
});

function client(opts: ConstructorParameters<typeof GatewayClient>[1], events: GatewayEvent[] = []): GatewayClient {
  const c = new GatewayClient(gw.wsUrl, { WebSocket, minDelayMs: 20, maxDelayMs: 200, ...opts });
  for (const t of ["connected", "disconnected", "resubscribed", "tokenExpired", "error"] as const) c.on(t, (e) => events.push(e));
  clients.push(c);
  return c;
}

describe("client — tokens", () => {
  it("client — a token as the token query parameter or as a bearer.<jwt> subprotocol is accepted", async () => {
    for (const tokenVia of ["query", "protocol"] as const) {
      const c = client({ token: await sign(ALL), tokenVia });
      await c.connect();
      const got: unknown[] = [];
      await c.subscribe(`auth.${tokenVia}`, (m) => void got.push(m.data)).ready;
      await c.publish(`auth.${tokenVia}`, { tokenVia });
      await waitFor(() => got.length === 1);
      expect(got).toEqual([{ tokenVia }]);
    }
  });

  it("client — by default the token travels in the subprotocol header, never in the URL", async () => {
    const opened: { url: string; protocols?: string | string[] }[] = [];
    class Recording extends WebSocket {
      constructor(url: string, protocols?: string | string[]) {
        super(url, protocols);
        opened.push({ url, protocols });
      }
    }
    const token = await sign(ALL);
    const c = client({ token, WebSocket: Recording });
    await c.connect();
    expect(opened).toHaveLength(1);
    expect(opened[0]!.url).not.toContain("token");
    expect(opened[0]!.url).not.toContain(token);
    expect(opened[0]!.protocols).toEqual(["fanout.v1", `bearer.${token}`]);
  });

  it("client — 4001 without getToken stops with tokenExpired; with getToken it reconnects with a fresh token and resumes", async () => {
    const short = await sign(ALL, { exp: Math.floor(Date.now() / 1000) + 2 });
    const stopped: GatewayEvent[] = [];
    const a = client({ token: short }, stopped);
    const renewed: GatewayEvent[] = [];
    let calls = 0;
    const b = client({ getToken: async () => (++calls === 1 ? short : sign(ALL)) }, renewed);
    await Promise.all([a.connect(), b.connect()]);
    const seen: number[] = [];
    await b.subscribe("auth.renew", (m) => void seen.push(m.seq)).ready;
    const first = await b.publish("auth.renew", 1);

    await waitFor(() => stopped.some((e) => e.type === "tokenExpired"), { timeoutMs: 8_000, what: "4001 on the client without getToken" });
    expect(stopped).toContainEqual(expect.objectContaining({ type: "disconnected", code: 4001, willReconnect: false }));
    await expect(a.publish("auth.renew", 2)).rejects.toMatchObject({ code: "token_expired" });

    await waitFor(() => renewed.some((e) => e.type === "tokenExpired") && renewed.filter((e) => e.type === "resubscribed").length >= 2, {
      timeoutMs: 8_000,
      what: "reconnect with a fresh token",
    });
    expect(calls).toBeGreaterThanOrEqual(2);
    const second = await b.publish("auth.renew", 3);
    await waitFor(() => seen.length >= 2);
    expect(seen).toEqual([first.seq, second.seq]);
  });
});
