// Two regions that lose the link between them while each keeps its link with the third (the NATS gateway
// connections between them dropped and refused: Supercluster.split). NATS gateways do not relay, so the two
// do not reach each other through the third. Split b|c: both still reach the home region a, so publishes in
// either are stored and both regions' clients read on. Split a|b: b's publishes fail temporary, b's mirror
// stops copying, and b's clients get what they missed once the link is back. Either way every client gets
// every message the stream holds once, in order.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSupercluster, type RegionName, type Supercluster } from "#testkit/nats-supercluster.js";
import type { GatewayHandle } from "#testkit/gateway.js";
import { startRegionGateway } from "#testkit/region-gateway.js";
import { httpPublish, TestClient, type MsgFrame } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

let sc: Supercluster;
const gw = {} as Record<RegionName, GatewayHandle>;
const sockets: TestClient[] = [];

async function socket(g: GatewayHandle): Promise<TestClient> {
  const c = await TestClient.connect(g.wsUrl);
  sockets.push(c);
  return c;
}

/** Publishes `{i}` through `g`: whether it was acknowledged (a refusal must be temporary). */
async function publish(g: GatewayHandle, channel: string, i: number): Promise<boolean> {
  const r = await httpPublish(g.url, channel, { i });
  if (r.status === 201) return true;
  expect(r.body, `publish ${i} refused`).toMatchObject({ temporary: true });
  return false;
}

/** The channel's messages as the home region's stream holds them (the truth every client must match). */
async function stored(channel: string): Promise<number[]> {
  const r = await fetch(`${gw.a.url}/v1/channels/${encodeURIComponent(channel)}/messages?from_seq=1&limit=1000`);
  expect(r.status).toBe(200);
  return ((await r.json()) as { messages: { data: { i: number } }[] }).messages.map((m) => m.data.i);
}

const values = (msgs: readonly MsgFrame[]) => msgs.map((m) => (m.data as { i: number }).i);

/** The regions `region` has an outbound gateway connection to now (its monitoring's /gatewayz). */
async function linkedTo(region: RegionName): Promise<string[]> {
  const r = await fetch(`http://127.0.0.1:${sc.regions[region].monitorPort}/gatewayz`);
  return Object.keys(((await r.json()) as { outbound_gateways?: Record<string, unknown> }).outbound_gateways ?? {}).sort();
}

beforeAll(async () => {
  sc = await startSupercluster({ readyTimeoutMs: 60_000 });
  gw.a = await startRegionGateway(sc, "a", { resumeWait: "3s" });
  [gw.b, gw.c] = await Promise.all([startRegionGateway(sc, "b", { resumeWait: "3s" }), startRegionGateway(sc, "c", { resumeWait: "3s" })]);
}, 180_000);

afterAll(async () => {
  for (const s of sockets) s.close();
  await Promise.all(Object.values(gw).map((g) => g.stop()));
  await sc?.stop();
}, 60_000);

describe("regions — two regions split, each still linked to the third", () => {
  it("regions — split b|c, then a|b: b's and c's clients get every stored message once, in order; b's publishes fail temporary only while it is split from a", async () => {
    const ch = "split.one";
    const [cb, cc] = await Promise.all([socket(gw.b), socket(gw.c)]);
    await Promise.all([cb.sub(ch), cc.sub(ch)]);
    const acked: number[] = [];
    let i = 0;
    const pub = async (g: GatewayHandle): Promise<boolean> => {
      const v = ++i;
      const ok = await publish(g, ch, v);
      if (ok) acked.push(v);
      return ok;
    };

    // b|c: both reach a; a publish in either is routed home and acknowledged.
    sc.split("b", "c", true);
    await waitFor(async () => (await linkedTo("b")).join() === "a" && (await linkedTo("c")).join() === "a", {
      timeoutMs: 10_000,
      what: "b and c linked to a only",
    });
    for (let k = 0; k < 10; k++) await pub(k % 2 ? gw.b : gw.c);
    expect(acked).toHaveLength(10);
    await Promise.all([cb.waitForMsgs(10, 30_000), cc.waitForMsgs(10, 30_000)]);
    sc.split("b", "c", false);
    await sc.waitJoined(60_000);

    // a|b: b cannot reach the home region; c can.
    sc.split("a", "b", true);
    expect(await linkedTo("c")).toEqual(["a", "b"]);
    await waitFor(async () => !(await pub(gw.b)), { timeoutMs: 30_000, what: "a publish in b refused" });
    const cAcked = acked.length;
    for (let k = 0; k < 5; k++) await pub(gw.c);
    expect(acked.length).toBe(cAcked + 5);
    await cc.waitForMsgs(acked.length, 30_000);
    sc.split("a", "b", false);
    await sc.waitJoined(60_000);
    await waitFor(() => pub(gw.b), { timeoutMs: 60_000, what: "a publish in b acknowledged once the link is back" });

    const truth = await stored(ch);
    expect(truth).toEqual(expect.arrayContaining(acked));
    await Promise.all([cb.waitForMsgs(truth.length, 60_000), cc.waitForMsgs(truth.length, 60_000)]);
    expect(values(cb.msgs)).toEqual(truth);
    expect(values(cc.msgs)).toEqual(truth);
    expect([cb.open, cc.open]).toEqual([true, true]);
  }, 240_000);
});
