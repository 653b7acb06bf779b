// Reads in a region whose mirror cannot answer yet, on a real 3-region supercluster. Two ways lead home: a
// mirror that is not current does not answer direct gets, so the stream in the home region does (nats-server);
// a mirror that answers but ends short of the catch-up's target is waited for up to REGION_RESUME_WAIT (0 ms
// for b's gateway here), then read past at home (broker/jetstream/replay.ts, `fromMirrorOrOrigin`).
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSupercluster, type RegionName, type Supercluster } from "#testkit/nats-supercluster.js";
import type { GatewayHandle } from "#testkit/gateway.js";
import { startRegionGateway } from "#testkit/region-gateway.js";
import { TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { contiguousFrom, publishMany } from "#testkit/stream-fill.js";

const STREAM = "FANOUT_CHANNELS";
const MIRROR_B = `${STREAM}-b`;
/** Stored in a while b is down; b's mirror copies them once b is back. */
const BURST = 50_000;
/** One-way delay of the links from a into b while b's mirror copies the burst. */
const LINK_DELAY_MS = 300;
let sc: Supercluster;
const gw = {} as Record<"a" | "b", GatewayHandle>;
const conns: NatsConnection[] = [];
const sockets: TestClient[] = [];

const regionGateway = (region: RegionName, extra: string[] = [], logLevel = "info"): Promise<GatewayHandle> =>
  startRegionGateway(sc, region, { logLevel, args: extra });

beforeAll(async () => {
  sc = await startSupercluster({ readyTimeoutMs: 60_000 });
  gw.a = await regionGateway("a");
  gw.b = await regionGateway("b", ["--region-resume-wait", "0s"], "debug");
}, 180_000);

afterAll(async () => {
  for (const s of sockets) s.close();
  await Promise.all(conns.map((c) => c.close()));
  await Promise.all(Object.values(gw).map((g) => g.stop()));
  await sc?.stop();
}, 60_000);

describe("regions — reads the region's mirror cannot answer", () => {
  it("regions — a catch-up in b past b's lagging mirror reads the rest from the home region: every message once, in order, then live", async () => {
    const ch = "fallback.room";
    const nc = await connect({ servers: sc.regions.a.url });
    conns.push(nc);
    const js = jetstream(nc);
    // A burst stored at home while b is down; b comes back with the links from a delayed, so that its mirror
    // copies the burst slowly while the catch-up reads it.
    await sc.regions.b.kill();
    let lastSeq: number;
    try {
      lastSeq = (await publishMany(js, ch, BURST)).at(-1)!;
      sc.regions.b.links.delay(LINK_DELAY_MS);
    } finally {
      await sc.regions.b.restart();
    }
    try {
      await waitFor(async () => ((await fetch(`${gw.b.url}/readyz`)).status === 200 ? true : undefined), {
        timeoutMs: 60_000,
        what: "b's gateway ready again",
      });
      const ncB = await connect({ servers: sc.regions.b.url });
      conns.push(ncB);
      const behind = (await (await jetstreamManager(ncB)).streams.info(MIRROR_B)).state.last_seq;
      expect(behind).toBeLessThan(lastSeq);
      // A direct get by the stream's name asked in b for what b's mirror lacks is answered at home: a mirror
      // that is not current leaves direct gets to the stream (nats-server), so reads go home by themselves.
      const r = await ncB.request(`$JS.API.DIRECT.GET.${STREAM}`, JSON.stringify({ seq: lastSeq }), { timeout: 10_000 });
      expect(r.headers?.get("Nats-Stream")).toBe(STREAM);
      expect(Number(r.headers?.get("Nats-Sequence"))).toBe(lastSeq);
      const c = await TestClient.connect(gw.b.wsUrl);
      sockets.push(c);
      const ok = await c.sub(ch, { from: "all" });
      expect(ok).toMatchObject({ firstSeq: 1, lastSeq });
      await c.waitForMsgs(Math.min(lastSeq, behind + 1), 60_000);
      sc.regions.b.links.delay(0);
      await publishMany(js, ch, 5, BURST);
      await c.waitForMsgs(BURST + 5, 90_000);
      expect(c.msgs.length).toBe(BURST + 5);
      expect(contiguousFrom(c.msgs, 0)).toBe(true);
      expect(c.msgs.map((m) => m.seq)).toEqual(Array.from({ length: BURST + 5 }, (_, i) => i + 1));
    } finally {
      sc.regions.b.links.delay(0);
    }
  }, 240_000);
});
