// POST /v1/server/events/replay against a real nats-server, a real gateway (authentication on, the control
// plane on its admin listener) and a real HTTP receiver: events already delivered arrive again, under their
// ids, from an id or from a time; the request passes the control plane's chain (key, JSON body) first.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { TestClient } from "#testkit/ws-client.js";
import { uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { WebhookReceiver } from "#testkit/webhook-receiver.js";
import { AUDIENCE, ISSUER, SECRET, sign } from "#testkit/auth.js";

const API_KEY = "events-replay-api-key-0123456789";
type Event = { id: number; type: string; time: string; channel?: string; client: string };

let nats: NatsServerHandle;
let gw: GatewayHandle;
let receiver: WebhookReceiver;
const uniq = uniqueNames();

const delivered = (): Event[] => receiver.requests.flatMap((r) => (JSON.parse(r.body) as { events: Event[] }).events);

/** The ids of the events of the socket that subscribed to `channel`, each time they arrived. */
function idsOf(channel: string): number[] {
  const client = delivered().find((e) => e.channel === channel && e.type === "subscribe")?.client;
  if (client === undefined) return [];
  return delivered()
    .filter((e) => e.client === client)
    .map((e) => e.id);
}

async function lifeOf(channel: string): Promise<void> {
  const token = await sign({ channels: { sub: [">"] } }, { sub: "replayer" });
  const c = await TestClient.connect(gw.wsUrl, { headers: { authorization: `Bearer ${token}` } });
  await c.sub(channel);
  c.ws.close(1000, "bye");
  await c.waitClosed();
  // connect, subscribe, and on close unsubscribe and disconnect
  await waitFor(() => idsOf(channel).length >= 4, { timeoutMs: 20_000, what: `the 4 events of ${channel}` });
}

async function replay(body: unknown, headers: Record<string, string> = { "x-api-key": API_KEY, "content-type": "application/json" }) {
  const r = await fetch(`${gw.metricsUrl}/v1/server/events/replay`, { method: "POST", headers, body: JSON.stringify(body) });
  return { status: r.status, json: (await r.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: API_KEY, EVENTS_WEBHOOK_URL: receiver.url, EVENTS_WEBHOOK_TIMEOUT: "2s" },
  });
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
  await receiver?.down();
});

describe("events — replaying the webhook", () => {
  it("events — replay refuses a missing key, a body not declared JSON and a bad position, and sends nothing again then", async () => {
    const channel = uniq("rp.refused");
    await lifeOf(channel);
    const before = receiver.requests.length;
    expect((await replay({ fromId: 1 }, { "content-type": "application/json" })).status).toBe(401);
    expect((await replay({ fromId: 1 }, { "x-api-key": API_KEY, "content-type": "text/plain" })).status).toBe(415);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    for (const bad of [
      {},
      { fromId: 0 },
      { fromId: 1, fromTime: new Date().toISOString() },
      { fromTime: "yesterday-ish" },
      { fromId: 1_000_000 },
      { fromTime: future },
    ]) {
      const r = await replay(bad);
      expect(r.status).toBe(400);
      expect(r.json.error).toBe("bad_request");
    }
    expect(receiver.requests.length).toBe(before);
  });

  it("events — from an id: that event and every later one arrive again under the same ids; from a time likewise", async () => {
    const first = uniq("rp.first");
    await lifeOf(first);
    const ids = idsOf(first);
    const second = uniq("rp.second");
    const at = new Date().toISOString();
    await lifeOf(second);

    const r = await replay({ fromId: ids[1] });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ fromId: ids[1] });
    expect(r.json.pending).toBeGreaterThanOrEqual(7);
    // The first socket's events from its second one on, and all of the second socket's, come again.
    await waitFor(() => idsOf(first).length >= 7 && idsOf(second).length >= 8, { timeoutMs: 20_000, what: "the replayed events" });
    expect(idsOf(first)).toEqual([...ids, ...ids.slice(1)]);
    const secondIds = idsOf(second).slice(0, 4);
    expect(idsOf(second)).toEqual([...secondIds, ...secondIds]);

    const t = await replay({ fromTime: at });
    expect(t.status).toBe(200);
    await waitFor(() => idsOf(second).length >= 12, { timeoutMs: 20_000, what: "the events from the time again" });
    expect(idsOf(second)).toEqual([...secondIds, ...secondIds, ...secondIds]);
    expect(idsOf(first)).toHaveLength(7); // older than the time: not sent again
  });
});
