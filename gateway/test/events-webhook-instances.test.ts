import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { verifySignature } from "../src/backend/signature.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { TestClient } from "#testkit/ws-client.js";
import { uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { WebhookReceiver } from "#testkit/webhook-receiver.js";

const SECRET = "webhook-secret-instances";
type Event = { id: number; type: string; client: string; channel?: string };

let nats: NatsServerHandle;
let receiver: WebhookReceiver;
let secretFile = "";
const gateways: GatewayHandle[] = [];
const uniq = uniqueNames();

// EVENTS_WEBHOOK_TAKEOVER is 30 s here (the lease's length; the consumer's ack wait is 20 s): anything the
// tests see sooner than that was handed over (lease released, batch handed back), not taken over from a dead sender.
const HANDOVER_MS = 15_000;

const start = async (): Promise<GatewayHandle> => {
  const gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: {
      EVENTS_WEBHOOK_URL: receiver.url,
      EVENTS_WEBHOOK_SECRET_FILE: secretFile,
      EVENTS_WEBHOOK_BACKOFF_MAX: "1s",
      EVENTS_WEBHOOK_TIMEOUT: "2s",
      EVENTS_WEBHOOK_TAKEOVER: "30s",
    },
  });
  gateways.push(gw);
  return gw;
};

const accepted = (): Event[] => receiver.requests.filter((r) => r.status < 300).flatMap((r) => (JSON.parse(r.body) as { events: Event[] }).events);

async function lifeOf(gw: GatewayHandle, channel: string): Promise<void> {
  const c = await TestClient.connect(gw.wsUrl);
  await c.sub(channel);
  expect((await c.request({ op: "unsub", channel })).op).toBe("ok");
  c.ws.close(1000, "bye");
  await c.waitClosed();
}

/** The accepted events of the socket that subscribed to `channel`, by id. */
function eventsOf(channel: string): Event[] {
  const all = accepted();
  const client = all.find((e) => e.channel === channel && e.type === "subscribe")?.client;
  if (client === undefined) return [];
  return all.filter((e) => e.client === client).sort((a, b) => a.id - b.id);
}

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  secretFile = join(mkdtempSync(join(tmpdir(), "fgw-events-")), "secret");
  writeFileSync(secretFile, SECRET);
  nats = await startNatsServer();
});
afterAll(async () => {
  for (const gw of gateways) await gw.stop();
  await nats?.stop();
  await receiver?.down();
});

describe("events — the webhook sender across instances", () => {
  it("events — a sender stopped with a refused batch hands it back: another instance sends it long before the ack wait", async () => {
    const a = await start();
    receiver.status = 503;
    const channel = uniq("ev.handover");
    await lifeOf(a, channel);
    await waitFor(() => receiver.requests.filter((r) => r.status === 503).length >= 2, { timeoutMs: 20_000, what: "two refused tries" });
    const refused = receiver.requests.find((r) => r.status === 503)!.body;
    await start();
    expect(await a.stop()).toBe(0);
    receiver.status = 200;
    await waitFor(() => eventsOf(channel).length >= 4, { timeoutMs: HANDOVER_MS, what: "the refused batch, sent by the other instance" });
    expect(eventsOf(channel).map((e) => e.type)).toEqual(["connect", "subscribe", "unsubscribe", "disconnect"]);
    const ids = (body: string) => (JSON.parse(body) as { events: Event[] }).events.map((e) => e.id);
    expect(accepted().map((e) => e.id)).toEqual(expect.arrayContaining(ids(refused)));
  });

  it("events — two instances, one receiver: every event of sockets on both arrives, none twice", async () => {
    const [b] = gateways.slice(-1);
    const c = await start();
    const channels = Array.from({ length: 6 }, (_, i) => uniq(`ev.two${i}`));
    await Promise.all(channels.map((ch, i) => lifeOf(i % 2 ? b! : c, ch)));
    for (const ch of channels) await waitFor(() => eventsOf(ch).length >= 4, { timeoutMs: 20_000, what: `the 4 events of ${ch}` });
    for (const ch of channels) expect(eventsOf(ch).map((e) => e.type)).toEqual(["connect", "subscribe", "unsubscribe", "disconnect"]);
    const ids = accepted().map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const r of receiver.requests) expect(verifySignature(r.signature, SECRET, r.body)).toBe(true);
  });
});
