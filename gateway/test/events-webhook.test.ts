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
import { metric } from "#testkit/metrics.js";
import { WebhookReceiver } from "#testkit/webhook-receiver.js";
import { SseReader } from "#testkit/sse-client.js";

const SECRET = "webhook-secret-0123456789";
/** The secret being rotated out: the file's second line, so every request carries a signature with each. */
const PREVIOUS = "webhook-secret-previous-9876543210";
type Event = {
  id: number;
  type: string;
  time: string;
  user: string;
  client: string;
  transport: string;
  channel?: string;
  code?: number;
  reason?: string;
};

let nats: NatsServerHandle;
let gw: GatewayHandle;
let receiver: WebhookReceiver;
const uniq = uniqueNames();

/** The events of every request the receiver answered 2xx, each request's signature checked as a backend would. */
function delivered(): Event[] {
  return receiver.requests.filter((r) => r.status < 300).flatMap((r) => (JSON.parse(r.body) as { events: Event[] }).events);
}

/** The `webhook` part of /v1/stats. */
async function webhookStats(): Promise<{ pending: number; oldestPendingSeconds: number; sending: boolean; calls: number; failures: number; dropped: number }> {
  return ((await (await fetch(`${gw.metricsUrl}/v1/stats`)).json()) as { webhook: never }).webhook;
}

/** A socket's whole life: connect, subscribe to `channel`, unsubscribe, close; resolves with its client id. */
async function lifeOf(channel: string): Promise<void> {
  const c = await TestClient.connect(gw.wsUrl);
  await c.sub(channel);
  const r = await c.request({ op: "unsub", channel });
  expect(r.op).toBe("ok");
  c.ws.close(1000, "bye");
  await c.waitClosed();
}

/** The events of the socket that subscribed to `channel`, in delivery order. */
function eventsOf(channel: string): Event[] {
  const all = delivered();
  const client = all.find((e) => e.channel === channel && e.type === "subscribe")?.client;
  if (client === undefined) return [];
  return all.filter((e) => e.client === client);
}

beforeAll(async () => {
  receiver = await WebhookReceiver.start();
  const dir = mkdtempSync(join(tmpdir(), "fgw-events-"));
  writeFileSync(join(dir, "secret"), `${SECRET}\n${PREVIOUS}\n`);
  // Namespaces that narrow the kinds: none for `quiet`'s channels, only presence for `pres`'s.
  writeFileSync(join(dir, "namespaces.yaml"), "namespaces:\n  quiet: { events: false }\n  pres: { events: [presence.join, presence.leave] }\n");
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    env: {
      EVENTS_WEBHOOK_URL: receiver.url,
      EVENTS_WEBHOOK_SECRET_FILE: join(dir, "secret"),
      EVENTS_WEBHOOK_BACKOFF_MAX: "1s",
      EVENTS_WEBHOOK_TIMEOUT: "2s",
      NAMESPACES_FILE: join(dir, "namespaces.yaml"),
    },
  });
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
  await receiver?.down();
});

describe("events — recorded in a stream, sent to a webhook", () => {
  it("events — a socket's connect, subscribe, unsubscribe and disconnect arrive signed (with both secrets of a rotation), in order, ids rising", async () => {
    const channel = uniq("ev.life");
    await lifeOf(channel);
    const events = await waitFor(() => (eventsOf(channel).length >= 4 ? eventsOf(channel) : undefined), { timeoutMs: 20_000, what: "4 events" });
    expect(events.map((e) => e.type)).toEqual(["connect", "subscribe", "unsubscribe", "disconnect"]);
    expect(events[1]).toMatchObject({ channel, user: "anon" });
    expect(events[3]).toMatchObject({ code: 1000, reason: "bye" });
    for (const e of events) expect(e.transport).toBe("websocket");
    const ids = events.map((e) => e.id);
    expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    expect(new Set(ids).size).toBe(4);
    for (const e of events) expect(Number.isNaN(Date.parse(e.time))).toBe(false);
    for (const r of receiver.requests) {
      // Mid-rotation: a backend that knows only the new secret, and one that knows only the previous, both accept it.
      expect(verifySignature(r.signature, SECRET, r.body)).toBe(true);
      expect(verifySignature(r.signature, PREVIOUS, r.body)).toBe(true);
      expect(r.signature.match(/v1=/g)).toHaveLength(2);
      expect(verifySignature(r.signature, "another secret", r.body)).toBe(false);
    }
  });

  it("events — failed answers are retried with the same ids until a 2xx; the receiver down for a while loses nothing", async () => {
    // Refusals first: the receiver gets the batch and answers 503, so the retries can be compared.
    receiver.status = 503;
    const refused = uniq("ev.refused");
    await lifeOf(refused);
    await waitFor(() => receiver.requests.filter((r) => r.status === 503).length >= 2, { timeoutMs: 20_000, what: "two refused tries" });
    // Then down: connections refused, while events keep coming.
    await receiver.down();
    const during = Array.from({ length: 5 }, (_, i) => uniq(`ev.down${i}`));
    for (const ch of during) await lifeOf(ch);
    const before = await metric(gw.metricsUrl, "fanout_webhook_calls_total", { hook: "webhook", result: "unreachable" });
    await waitFor(async () => (await metric(gw.metricsUrl, "fanout_webhook_calls_total", { hook: "webhook", result: "unreachable" })) >= before + 2, {
      timeoutMs: 20_000,
      what: "tries while the receiver is down",
    });
    // The lag is visible: the down receiver's events wait in the stream (5 sockets of 4 events, and the refused ones).
    expect(await metric(gw.metricsUrl, "fanout_webhook_pending")).toBeGreaterThanOrEqual(24);
    expect(await metric(gw.metricsUrl, "fanout_webhook_calls_total", { hook: "webhook", result: "status" })).toBeGreaterThanOrEqual(2);
    // And on the live page's /v1/stats: how many, how old, the failures, and that this instance is the one sending.
    const lagging = await webhookStats();
    expect(lagging.pending).toBeGreaterThanOrEqual(24);
    expect(lagging.oldestPendingSeconds).toBeGreaterThan(0);
    expect(lagging.failures).toBeGreaterThanOrEqual(4);
    expect(lagging.sending).toBe(true);
    receiver.status = 200;
    await receiver.up();
    for (const ch of [refused, ...during]) await waitFor(() => eventsOf(ch).length >= 4, { timeoutMs: 30_000, what: `the 4 events of ${ch}` });

    // Both views at once: the leader records each channel's channel.vacated after the debounce, so an event can
    // still arrive (pending 1 for a moment) after the sockets' own events were all delivered.
    const drained = async () => {
      const stats = await webhookStats();
      return stats.pending === 0 && (await metric(gw.metricsUrl, "fanout_webhook_pending")) === 0 ? stats : undefined;
    };
    expect(await waitFor(drained, { timeoutMs: 20_000, what: "no events pending" })).toMatchObject({ pending: 0, oldestPendingSeconds: 0, dropped: 0 });
    expect(await metric(gw.metricsUrl, "fanout_webhook_dropped_total")).toBe(0);

    // Every refused try carried the same events, under the same ids, as the one finally accepted.
    const tries = receiver.requests.filter((r) => r.status === 503).map((r) => r.body);
    const accepted = receiver.requests.filter((r) => r.status < 300).map((r) => r.body);
    expect(accepted).toContain(tries[0]);
    const ids = (body: string) => (JSON.parse(body) as { events: Event[] }).events.map((e) => e.id);
    for (const t of tries) expect(ids(t)).toEqual(ids(tries[0]!));

    // Nothing lost, nothing twice among the accepted, in stream order.
    const all = delivered().map((e) => e.id);
    expect(new Set(all).size).toBe(all.length);
    expect([...all].sort((a, b) => a - b)).toEqual(all);
    for (const ch of [refused, ...during]) expect(eventsOf(ch).map((e) => e.type)).toEqual(["connect", "subscribe", "unsubscribe", "disconnect"]);
  });

  it("events — a presence member records presence.join then presence.leave (at unsub, and at close), between its subscribe and unsubscribe; a watcher records none", async () => {
    const channel = uniq("ev.presence");
    const byClient = (client: string) => delivered().filter((e) => e.client === client);
    const watcher = await TestClient.connect(gw.wsUrl);
    const watcherId = (await watcher.sub(channel, { presence: "watch" })).client as string | undefined;
    const m1 = await TestClient.connect(gw.wsUrl);
    const m1Id = (await m1.sub(channel, { presence: true, info: { name: "one" } })).client as string;
    expect((await m1.request({ op: "unsub", channel })).op).toBe("ok");
    m1.ws.close(1000, "bye");
    // The second member leaves by closing its socket: its leave comes before its disconnect.
    const m2 = await TestClient.connect(gw.wsUrl);
    const m2Id = (await m2.sub(channel, { presence: true })).client as string;
    m2.ws.close(1000, "gone");
    await Promise.all([m1.waitClosed(), m2.waitClosed()]);
    const order = ["connect", "subscribe", "presence.join", "presence.leave", "unsubscribe", "disconnect"];
    for (const id of [m1Id, m2Id]) {
      const events = await waitFor(() => (byClient(id).length >= 6 ? byClient(id) : undefined), { timeoutMs: 20_000, what: `6 events of ${id}` });
      expect(events.map((e) => e.type)).toEqual(order);
      for (const e of events.slice(1, 5)) expect(e).toMatchObject({ channel, user: "anon", client: id, transport: "websocket" });
      const ids = events.map((e) => e.id);
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
    }
    // The watcher's own subscribe is delivered before the members' events; no presence event names it.
    watcher.ws.close(1000, "done");
    await watcher.waitClosed();
    const watcherEvents = await waitFor(
      () => {
        const mine = delivered().filter((e) => e.channel === channel && e.client !== undefined && e.client !== m1Id && e.client !== m2Id);
        return mine.length >= 2 ? mine : undefined;
      },
      { timeoutMs: 20_000, what: "the watcher's subscribe and unsubscribe" },
    );
    expect(watcherEvents.map((e) => e.type)).toEqual(["subscribe", "unsubscribe"]);
    if (watcherId !== undefined) expect(watcherEvents[0]!.client).toBe(watcherId);
    expect(
      delivered()
        .filter((e) => e.type.startsWith("presence."))
        .map((e) => e.client)
        .sort(),
    ).toEqual([m1Id, m1Id, m2Id, m2Id].sort());
  });

  it("events — an SSE stream is recorded too: connect and subscribe when it opens, unsubscribe and disconnect when the reader leaves", async () => {
    const channel = uniq("ev.sse");
    const stream = await SseReader.open(`${gw.url}/v1/channels/${encodeURIComponent(channel)}/events`);
    await waitFor(() => (eventsOf(channel).length >= 2 ? true : undefined), { timeoutMs: 20_000, what: "the SSE stream's connect and subscribe" });
    stream.close();
    const events = await waitFor(() => (eventsOf(channel).length >= 4 ? eventsOf(channel) : undefined), { timeoutMs: 20_000, what: "4 SSE events" });
    expect(events.map((e) => e.type)).toEqual(["connect", "subscribe", "unsubscribe", "disconnect"]);
    for (const e of events) expect(e).toMatchObject({ transport: "sse", user: "anon", client: events[0]!.client });
    expect(events[0]!.client).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(events[1]).toMatchObject({ channel });
    expect(events[3]).toMatchObject({ reason: "aborted" });
  });

  it("events — a namespace's events setting narrows its channels' kinds; connect and disconnect, and channels elsewhere, are untouched", async () => {
    const quiet = uniq("quiet.room");
    const pres = uniq("pres.room");
    const other = uniq("ev.ns");
    const c = await TestClient.connect(gw.wsUrl);
    for (const ch of [quiet, pres, other]) await c.sub(ch, { presence: true });
    c.ws.close(1000, "bye");
    await c.waitClosed();
    const mine = () => {
      const client = delivered().find((e) => e.channel === other && e.type === "subscribe")?.client; // not channel.occupied: it names no client
      return delivered().filter((e) => e.client === client);
    };
    // The last of them: the disconnect, recorded after every unsubscribe and leave.
    const events = await waitFor(() => (mine().some((e) => e.type === "disconnect") ? mine() : undefined), { timeoutMs: 20_000, what: "the disconnect" });
    expect(events.filter((e) => e.channel === quiet)).toEqual([]);
    expect(events.filter((e) => e.channel === pres).map((e) => e.type)).toEqual(["presence.join", "presence.leave"]);
    expect(events.filter((e) => e.channel === other).map((e) => e.type)).toEqual(["subscribe", "presence.join", "presence.leave", "unsubscribe"]);
    expect(events.filter((e) => e.channel === undefined).map((e) => e.type)).toEqual(["connect", "disconnect"]);
  });
});
