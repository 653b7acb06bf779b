// Presence and events across regions on a real 3-region supercluster (docs/operations.md "Regions"): both are
// global, one bucket and one events stream in the home region a, even when another region's gateway makes
// them; members and join/leave events are seen in every region; the one webhook sender gets every region's events.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSupercluster, type RegionName, type Supercluster } from "#testkit/nats-supercluster.js";
import type { GatewayHandle } from "#testkit/gateway.js";
import { startRegionGateway } from "#testkit/region-gateway.js";
import { TestClient, type Frame } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { WebhookReceiver } from "#testkit/webhook-receiver.js";

type Event = { id: number; type: string; client: string; channel?: string };
let sc: Supercluster;
let receiver: WebhookReceiver;
const gw = {} as Record<"b" | "c", GatewayHandle>;
const conns: NatsConnection[] = [];
const sockets: TestClient[] = [];

const regionGateway = (region: RegionName, secretFile: string): Promise<GatewayHandle> =>
  startRegionGateway(sc, region, {
    args: ["--presence-ttl", "2s", "--feed-linger", "100ms"],
    env: { EVENTS_WEBHOOK_URL: receiver.url, EVENTS_WEBHOOK_SECRET_FILE: secretFile, EVENTS_WEBHOOK_BACKOFF_MAX: "1s", EVENTS_WEBHOOK_TIMEOUT: "2s" },
  });

async function socket(g: GatewayHandle): Promise<TestClient> {
  const c = await TestClient.connect(g.wsUrl);
  sockets.push(c);
  return c;
}

async function members(c: TestClient, channel: string): Promise<string[]> {
  const r = await c.request({ op: "presence", channel });
  if (r.op !== "presence") throw new Error(`presence failed: ${JSON.stringify(r)}`);
  return (r.members as { client: string }[]).map((m) => m.client).sort();
}

const framesOf = (c: TestClient, op: string, channel: string): Frame[] => c.frames.filter((f) => f.op === op && f.channel === channel);
const accepted = (): Event[] => receiver.requests.filter((r) => r.status < 300).flatMap((r) => (JSON.parse(r.body) as { events: Event[] }).events);

beforeAll(async () => {
  sc = await startSupercluster({ readyTimeoutMs: 60_000 });
  receiver = await WebhookReceiver.start();
  const secretFile = join(mkdtempSync(join(tmpdir(), "fgw-regions-events-")), "secret");
  writeFileSync(secretFile, "regions-webhook-secret");
  // c's gateway first: it makes the bucket and the events streams, in the home region a all the same.
  gw.c = await regionGateway("c", secretFile);
  gw.b = await regionGateway("b", secretFile);
}, 180_000);

afterAll(async () => {
  for (const s of sockets) s.close();
  await Promise.all(conns.map((c) => c.close()));
  await Promise.all(Object.values(gw).map((g) => g.stop()));
  await receiver?.down();
  await sc?.stop();
}, 60_000);

describe("regions — presence and events are global, kept in the home region", () => {
  it("regions — the presence bucket, the events stream, the webhook's lease and the state bucket live in a, though c's gateway made them", async () => {
    const nc = await connect({ servers: sc.regions.b.url });
    conns.push(nc);
    const jsm = await jetstreamManager(nc);
    for (const name of ["KV_PRESENCE", "FANOUT_EVENTS", "FANOUT_EVENTS_SENDER", "KV_FANOUT_EVENTS_STATE"]) {
      const si = await waitFor(() => jsm.streams.info(name).catch(() => undefined), { timeoutMs: 30_000, what: `stream ${name}` });
      expect({ name, cluster: si.cluster?.name, placement: si.config.placement?.cluster }).toEqual({ name, cluster: "a", placement: "a" });
    }
  });

  it("regions — a member in b is listed and announced in c, and its leave too; the one webhook sender gets both regions' events once", async () => {
    const ch = "regions.lobby";
    const watcher = await socket(gw.c);
    const okWatcher = await watcher.sub(ch, { presence: true });
    const member = await socket(gw.b);
    const okMember = await member.sub(ch, { presence: true });
    const ids = [okWatcher.client as string, okMember.client as string].sort();
    await waitFor(() => framesOf(watcher, "join", ch).some((f) => f.client === okMember.client) || undefined, {
      timeoutMs: 15_000,
      what: "b's member's join seen in c",
    });
    expect(await members(watcher, ch)).toEqual(ids);
    expect(await members(member, ch)).toEqual(ids);
    member.close();
    await waitFor(() => framesOf(watcher, "leave", ch).some((f) => f.client === okMember.client) || undefined, {
      timeoutMs: 15_000,
      what: "b's member's leave seen in c",
    });
    expect(framesOf(watcher, "join", ch).filter((f) => f.client === okMember.client)).toHaveLength(1);
    expect(await members(watcher, ch)).toEqual([okWatcher.client]);

    // Every region's events reach the one sender, each once.
    await waitFor(
      () => {
        const subs = accepted().filter((e) => e.type === "subscribe" && e.channel === ch);
        return ids.every((id) => subs.some((e) => e.client === id)) || undefined;
      },
      { timeoutMs: 30_000, what: "both regions' subscribe events at the webhook" },
    );
    const all = accepted();
    expect(new Set(all.map((e) => e.id)).size).toBe(all.length);
    expect(
      all
        .filter((e) => e.type === "subscribe" && e.channel === ch)
        .map((e) => e.client)
        .sort(),
    ).toEqual(ids);
  }, 60_000);

  it("regions — /v1/stats (the live page) shows each region's mirror and its lag", async () => {
    for (const r of ["b", "c"] as const) {
      const stats = (await (await fetch(`${gw[r].metricsUrl}/v1/stats`)).json()) as { regions: { mirrors: { stream: string; lag: number }[] } | null };
      expect(stats.regions).toEqual({ mirrors: [{ stream: `FANOUT_CHANNELS-${r}`, lag: expect.any(Number) as number }] });
    }
  });
});
