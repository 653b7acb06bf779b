// The gateway in regions on a real 3-region supercluster (testkit/nats-supercluster.ts): the layout the
// primaries make (the origin in the home region a, a mirror in b), reads in b answered by b's mirror, a client
// moving from a to b and resuming at its position, and b's clients while region a is down.
import { connect, headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSupercluster, type RegionName, type Supercluster } from "#testkit/nats-supercluster.js";
import type { GatewayHandle } from "#testkit/gateway.js";
import { startRegionGateway, subRetrying } from "#testkit/region-gateway.js";
import { httpPublish, TestClient, type MsgFrame } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { contiguousFrom, publishMany } from "#testkit/stream-fill.js";

const STREAM = "FANOUT_CHANNELS";
const MIRROR_B = `${STREAM}-b`;
/** The lag test: a burst of this many messages stored in a while b is down, copied by b's mirror once it is back. */
const LAG_BURST = 50_000;
let sc: Supercluster;
const gw = {} as Record<"a" | "b", GatewayHandle>;
const conns: NatsConnection[] = [];
const sockets: TestClient[] = [];
let n = 0;
const uniq = (base: string) => `${base}${++n}`;

const regionGateway = (region: RegionName, extra: string[] = []): Promise<GatewayHandle> => startRegionGateway(sc, region, { resumeWait: "3s", args: extra });

async function nats(region: RegionName): Promise<{ nc: NatsConnection; jsm: JetStreamManager }> {
  const nc = await connect({ servers: sc.regions[region].url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  conns.push(nc);
  return { nc, jsm: await jetstreamManager(nc) };
}

async function socket(g: GatewayHandle): Promise<TestClient> {
  const c = await TestClient.connect(g.wsUrl);
  sockets.push(c);
  return c;
}

/** Publishes `data` to `channel` through a gateway; the seq it was stored at. */
async function publish(g: GatewayHandle, channel: string, data: unknown): Promise<number> {
  const r = await httpPublish(g.url, channel, data);
  if (r.status !== 201) throw new Error(`publish ${channel}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.seq as number;
}

const values = (msgs: readonly MsgFrame[]) => msgs.map((m) => (m.data as { i: number }).i);

beforeAll(async () => {
  sc = await startSupercluster({ readyTimeoutMs: 60_000 });
  // The home region's gateway first (it makes the origin), then b's (its mirror).
  gw.a = await regionGateway("a");
  gw.b = await regionGateway("b");
}, 180_000);

afterAll(async () => {
  for (const s of sockets) s.close();
  await Promise.all(conns.map((c) => c.close()));
  await Promise.all(Object.values(gw).map((g) => g.stop()));
  await sc?.stop();
}, 60_000);

describe("regions — layout", () => {
  it("regions — the origin lives in a with a's live prefix; b's mirror keeps its sequences and republishes under b's prefix", async () => {
    const { jsm } = await nats("b");
    const origin = await jsm.streams.info(STREAM);
    expect(origin.config.placement?.cluster).toBe("a");
    expect(origin.cluster?.name).toBe("a");
    expect(origin.config.republish).toEqual({ src: "ev.>", dest: "evlive.a.>" });
    const mirror = await jsm.streams.info(MIRROR_B);
    expect(mirror.cluster?.name).toBe("b");
    expect(mirror.config).toMatchObject({ mirror: { name: STREAM }, mirror_direct: true, allow_direct: true, republish: { src: "ev.>", dest: "evlive.b.>" } });
    // Region c runs no gateway: it holds no mirror (its gateway would make one).
    await expect(jsm.streams.info(`${STREAM}-c`)).rejects.toThrow(/not found/);
  });

  it("regions — a direct get by the origin's name asked in b is answered by b's mirror, at the origin's sequence", async () => {
    const ch = uniq("dg.");
    const seq = await publish(gw.a, ch, { i: 1 });
    const { nc, jsm } = await nats("b");
    await waitFor(async () => ((await jsm.streams.info(MIRROR_B)).state.last_seq >= seq ? true : undefined), { timeoutMs: 10_000, what: "b's mirror at seq" });
    const r = await nc.request(`$JS.API.DIRECT.GET.${STREAM}`, JSON.stringify({ seq }), { timeout: 5_000 });
    expect(r.headers?.get("Nats-Stream")).toBe(MIRROR_B);
    expect(Number(r.headers?.get("Nats-Sequence"))).toBe(seq);
    expect(r.headers?.get("Nats-Subject")).toBe(`ev.${ch}`);
    // And in a, the origin answers.
    const { nc: ncA } = await nats("a");
    const ra = await ncA.request(`$JS.API.DIRECT.GET.${STREAM}`, JSON.stringify({ seq }), { timeout: 5_000, headers: natsHeaders() });
    expect(ra.headers?.get("Nats-Stream")).toBe(STREAM);
  });

  it("regions — b's live feed is b's mirror's republish: a message published in a reaches b's clients once, from the mirror", async () => {
    const ch = uniq("live.");
    const { nc } = await nats("b");
    const seen: { subject: string; stream: string | undefined }[] = [];
    const sub = nc.subscribe(`evlive.*.${ch}`, { callback: (_e, m) => void seen.push({ subject: m.subject, stream: m.headers?.get("Nats-Stream") }) });
    await nc.flush();
    const cb = await socket(gw.b);
    await cb.sub(ch);
    const ca = await socket(gw.a);
    await ca.sub(ch);
    for (let i = 1; i <= 5; i++) await publish(i % 2 ? gw.a : gw.b, ch, { i });
    await cb.waitForMsgs(5);
    await ca.waitForMsgs(5);
    await waitFor(() => seen.length >= 10 || undefined, { timeoutMs: 10_000, what: "both regions' republishes" });
    sub.unsubscribe();
    expect(values(cb.msgs)).toEqual([1, 2, 3, 4, 5]);
    expect(values(ca.msgs)).toEqual([1, 2, 3, 4, 5]);
    expect(cb.msgs.map((m) => m.seq)).toEqual(ca.msgs.map((m) => m.seq));
    expect(new Set(seen.filter((s) => s.subject.startsWith("evlive.b.")).map((s) => s.stream))).toEqual(new Set([MIRROR_B]));
    expect(new Set(seen.filter((s) => s.subject.startsWith("evlive.a.")).map((s) => s.stream))).toEqual(new Set([STREAM]));
  });
});

describe("regions — moving between regions", () => {
  it("regions — a client that read N messages in a resumes in b at its position: every message once, in order (published in a and in b)", async () => {
    const ch = uniq("move.");
    const ca = await socket(gw.a);
    const okA = await ca.sub(ch, { from: "all" });
    for (let i = 1; i <= 20; i++) await publish(gw.a, ch, { i });
    await ca.waitForMsgs(20);
    const last = ca.msgs.at(-1)!;
    ca.close();
    // More while the client moves, in both regions.
    for (let i = 21; i <= 40; i++) await publish(i % 2 ? gw.a : gw.b, ch, { i });
    const cb = await socket(gw.b);
    const okB = await cb.sub(ch, { from: { seq: last.seq + 1, epoch: okA.epoch } });
    expect(okB.epoch).toBe(okA.epoch);
    expect(okB.epochChanged).toBeUndefined();
    for (let i = 41; i <= 50; i++) await publish(i % 2 ? gw.a : gw.b, ch, { i });
    await cb.waitForMsgs(30);
    expect([...values(ca.msgs), ...values(cb.msgs)]).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });
});

describe("regions — a resume ahead of the region's live feed", () => {
  const MIRROR_C = `${STREAM}-c`;
  // Region c's gateway for this block only. Its primary makes c's mirror and, checking it once an hour and only
  // reporting, leaves it as the test sets it: without its republish, what the mirror copies is stored in c but
  // reaches no live feed there, so c's feed is behind what c's reads answer, for certain, as long as the test wants.
  let gc: GatewayHandle | undefined;
  beforeAll(async () => {
    gc = await regionGateway("c", ["--stream-check-interval", "1h", "--stream-repair", "report"]);
  }, 120_000);
  afterAll(async () => {
    await gc?.stop();
    // Region c holds no mirror outside this block (the layout test says so).
    const { jsm } = await nats("c");
    await jsm.streams.delete(MIRROR_C).catch(() => undefined);
  }, 60_000);

  it("regions — a client resuming at a seq c's mirror holds but c's live feed has not fanned out yet gets only what follows it, once", async () => {
    const g = gc as GatewayHandle;
    const ch = uniq("ahead.");
    const live = await socket(g);
    await live.sub(ch);
    const ca = await socket(gw.a);
    const okA = await ca.sub(ch, { from: "all" });
    for (let i = 1; i <= 3; i++) await publish(gw.a, ch, { i });
    await live.waitForMsgs(3);
    const { jsm } = await nats("c");
    const config = (await jsm.streams.info(MIRROR_C)).config;
    await jsm.streams.update(MIRROR_C, { ...config, republish: undefined });
    let last = 0;
    for (let i = 4; i <= 20; i++) last = await publish(gw.a, ch, { i });
    await waitFor(async () => ((await jsm.streams.info(MIRROR_C)).state.last_seq >= last ? true : undefined), { timeoutMs: 10_000, what: "c's mirror at seq" });
    expect(live.msgs.length).toBe(3); // c's feed has not fanned out 4..20
    // Accepted at once (c's mirror holds the position), while c's feed is at 3.
    const ahead = await socket(g);
    await ahead.sub(ch, { from: { seq: last + 1, epoch: okA.epoch } });
    // The republish back: the next message shows c's feed its gap, which it repairs from the mirror (4..20).
    await jsm.streams.update(MIRROR_C, config);
    for (let i = 21; i <= 25; i++) await publish(gw.a, ch, { i });
    await live.waitForMsgs(25);
    await ahead.waitForMsgs(5);
    expect(values(live.msgs)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
    expect(values(ahead.msgs)).toEqual([21, 22, 23, 24, 25]);
  }, 60_000);
});

describe("regions — a mirror behind the home region", () => {
  it("regions — resumes in b ahead of b's lagging mirror wait for it: every message once, in order, none skipped", async () => {
    const ch = uniq("lag.");
    // A client already live in b: the feed exists, at the position b's mirror has republished.
    const live = await socket(gw.b);
    await live.sub(ch);
    const ca = await socket(gw.a);
    const okA = await ca.sub(ch, { from: "all" });
    // b's node is down while a burst is stored in a; back up, b's mirror copies the backlog for a while.
    const { nc } = await nats("a");
    await sc.regions.b.kill();
    try {
      const seqs = await publishMany(jetstream(nc), ch, LAG_BURST);
      const lastSeq = seqs.at(-1)!;
      await sc.regions.b.restart();
      await waitFor(async () => ((await fetch(`${gw.b.url}/readyz`)).status === 200 ? true : undefined), {
        timeoutMs: 30_000,
        what: "b's gateway ready again",
      });
      const { jsm } = await nats("b");
      expect((await jsm.streams.info(MIRROR_B)).state.last_seq).toBeLessThan(lastSeq); // the mirror lags now
      // One client had read 10 in a (the rest is stored at home, not yet in b), one had read them all.
      const behind = await socket(gw.b);
      const ahead = await socket(gw.b);
      // Each waits up to REGION_RESUME_WAIT; one still ahead of the mirror then is refused temporary, and retried.
      const [okBehind, okAhead] = await Promise.all([
        subRetrying(behind, ch, { seq: seqs[9]! + 1, epoch: okA.epoch }),
        subRetrying(ahead, ch, { seq: lastSeq + 1, epoch: okA.epoch }),
      ]);
      expect(okBehind.epoch).toBe(okA.epoch);
      expect(okAhead.epoch).toBe(okA.epoch);
      await publishMany(jetstream(nc), ch, 5, LAG_BURST);
      await behind.waitForMsgs(LAG_BURST - 5, 60_000);
      await ahead.waitForMsgs(5, 60_000);
      await live.waitForMsgs(LAG_BURST + 5, 60_000);
      expect(behind.msgs.length).toBe(LAG_BURST - 5);
      expect(contiguousFrom(behind.msgs, 10)).toBe(true);
      expect(values(ahead.msgs)).toEqual([LAG_BURST, LAG_BURST + 1, LAG_BURST + 2, LAG_BURST + 3, LAG_BURST + 4]);
      expect(live.msgs.length).toBe(LAG_BURST + 5);
      expect(contiguousFrom(live.msgs, 0)).toBe(true);
    } finally {
      if (!sc.regions.b.running) await sc.regions.b.restart();
    }
  }, 120_000);
});

describe("regions — the home region down", () => {
  it("regions — b's clients stay and read while a is down; a publish fails temporary, and succeeds once a is back; nothing lost or repeated", async () => {
    const ch = uniq("down.");
    const cb = await socket(gw.b);
    await cb.sub(ch);
    for (let i = 1; i <= 5; i++) await publish(gw.b, ch, { i });
    await cb.waitForMsgs(5);
    await sc.regions.a.kill();
    const failed = await waitFor(
      async () => {
        const r = await httpPublish(gw.b.url, ch, { i: -1 });
        return r.status === 201 ? undefined : r;
      },
      { timeoutMs: 30_000, what: "a publish in b failing while a is down" },
    );
    expect(failed.status).toBeGreaterThanOrEqual(500);
    expect(failed.body).toMatchObject({ temporary: true });
    // b's reads are local: history from b's mirror.
    const h = await fetch(`${gw.b.url}/v1/channels/${encodeURIComponent(ch)}/messages?from_seq=1&limit=10`);
    expect(h.status).toBe(200);
    expect(((await h.json()) as { messages: { data: { i: number } }[] }).messages.map((m) => m.data.i)).toEqual([1, 2, 3, 4, 5]);
    expect(cb.open).toBe(true);
    await sc.regions.a.restart();
    await waitFor(
      async () => {
        const r = await httpPublish(gw.b.url, ch, { i: 6 });
        return r.status === 201 ? true : undefined;
      },
      { timeoutMs: 60_000, what: "a publish in b acknowledged once a is back" },
    );
    for (let i = 7; i <= 10; i++) await publish(gw.b, ch, { i });
    await cb.waitForMsgs(10, 30_000);
    expect(values(cb.msgs)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(cb.open).toBe(true);
  }, 150_000);
});
