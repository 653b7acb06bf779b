// Failover on a real 3-region supercluster (docs/operations.md "Failover: losing the home region"): the home
// region a is lost, scripts/region-promote.sh makes b's mirror the stream, the gateways restart with
// HOME_REGION=b, and clients with positions of before are told the epoch changed (the SDK follows it); then a
// comes back as a region with a mirror.
import { execFile } from "node:child_process";
import { resolve } from "node:path";
import { promisify } from "node:util";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSupercluster, type RegionName, type Supercluster } from "#testkit/nats-supercluster.js";
import type { GatewayHandle } from "#testkit/gateway.js";
import { startRegionGateway } from "#testkit/region-gateway.js";
import { httpPublish, TestClient, type MsgFrame } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { GatewayClient, type GatewayEvent } from "../../client/src/index.js";
import { PACKAGE_ROOT } from "../../src/config/config.js";

const STREAM = "FANOUT_CHANNELS";
const PROMOTE = resolve(PACKAGE_ROOT, "scripts/region-promote.sh");
let sc: Supercluster;
const gw = {} as Record<RegionName, GatewayHandle>;
const conns: NatsConnection[] = [];
const sockets: TestClient[] = [];
let sdk: GatewayClient | undefined;

/** A region's gateway; `home` is HOME_REGION (REGIONS' first, a, when not given); `port` to come back on the same one. */
const regionGateway = (region: RegionName, home?: RegionName, port?: number): Promise<GatewayHandle> =>
  startRegionGateway(sc, region, {
    logLevel: "debug",
    readyTimeoutMs: 90_000,
    resumeWait: "3s",
    ...(home ? { home } : {}),
    ...(port !== undefined ? { port } : {}),
  });

async function jsm(region: RegionName): Promise<JetStreamManager> {
  const nc = await connect({ servers: sc.regions[region].url, maxReconnectAttempts: -1, reconnectTimeWait: 250 });
  conns.push(nc);
  return jetstreamManager(nc);
}

async function socket(g: GatewayHandle): Promise<TestClient> {
  const c = await TestClient.connect(g.wsUrl);
  sockets.push(c);
  return c;
}

async function publish(g: GatewayHandle, channel: string, i: number): Promise<number> {
  const r = await httpPublish(g.url, channel, { i });
  if (r.status !== 201) throw new Error(`publish ${channel}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.seq as number;
}

const values = (msgs: readonly MsgFrame[]) => msgs.map((m) => (m.data as { i: number }).i);
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

beforeAll(async () => {
  sc = await startSupercluster({ readyTimeoutMs: 60_000 });
  gw.a = await regionGateway("a");
  gw.b = await regionGateway("b");
  gw.c = await regionGateway("c");
}, 240_000);

afterAll(async () => {
  await sdk?.close();
  for (const s of sockets) s.close();
  await Promise.all(conns.map((c) => c.close()));
  await Promise.all(Object.values(gw).map((g) => g.stop()));
  await sc?.stop();
}, 60_000);

describe("regions — failover: losing the home region", () => {
  it("regions — promoting b while a is down: b's gateways publish and deliver again, at a new epoch the SDK and resuming clients are told of; c reads it; a comes back as a mirror", async () => {
    const ch = "failover.room";
    // Before: the stream in a; an SDK client and a raw client in b, each with every message.
    sdk = new GatewayClient(gw.b.wsUrl, { WebSocket: WebSocket as never, minDelayMs: 50, maxDelayMs: 250 });
    const gaps: GatewayEvent[] = [];
    sdk.on("gap", (e) => gaps.push(e));
    await sdk.connect();
    const got: number[] = [];
    const sub = sdk.subscribe<{ i: number }>(ch, (m) => void got.push(m.data.i), { from: "all" });
    const before = await sub.ready;
    const raw = await socket(gw.b);
    const okBefore = await raw.sub(ch, { from: "all" });
    for (let i = 1; i <= 10; i++) await publish(gw.a, ch, i);
    await raw.waitForMsgs(10);
    await waitFor(() => got.length >= 10 || undefined, { timeoutMs: 15_000, what: "the SDK's first 10" });
    const b = await jsm("b");
    const c = await jsm("c");
    for (const [m, name] of [
      [b, `${STREAM}-b`],
      [c, `${STREAM}-c`],
    ] as const)
      await waitFor(async () => ((await m.streams.info(name)).state.last_seq >= 10 ? true : undefined), { timeoutMs: 15_000, what: `${name} at 10` });
    const oldEpoch = okBefore.epoch as string;
    expect(before.epoch).toBe(oldEpoch);

    // The home region is lost: its node and its gateway.
    await sc.regions.a.kill();
    await gw.a.stop();

    // Promote b's mirror; the script checks that a's stream no longer answers.
    const run = await promisify(execFile)(PROMOTE, ["b", "--server", sc.regions.b.url, "--timeout", "60"], { timeout: 120_000 });
    expect(run.stdout).toMatch(/promoted 1 stream\(s\) to region b/);
    const promoted = await b.streams.info(STREAM);
    expect(promoted.cluster?.name).toBe("b");
    expect(promoted.config.mirror).toBeUndefined();
    expect(promoted.config.subjects).toEqual(["ev.>"]);
    expect(promoted.config.republish).toEqual({ src: "ev.>", dest: "evlive.b.>" });
    expect(promoted.state.last_seq).toBe(10);
    expect(promoted.created).not.toBe(oldEpoch);
    // c's mirror was made again, empty, and copies the new stream from its first message.
    expect((await c.streams.info(`${STREAM}-c`)).config.mirror?.name).toBe(STREAM);

    // Every region's gateways restart with HOME_REGION=b (on the same ports: the SDK reconnects there).
    for (const r of ["b", "c"] as const) {
      const port = gw[r].port;
      await gw[r].stop();
      gw[r] = await regionGateway(r, "b", port);
    }
    // b publishes again, numbering on from the last message b's mirror had.
    const seqs: number[] = [];
    for (let i = 11; i <= 15; i++) seqs.push(await publish(gw.b, ch, i));
    expect(seqs).toEqual(range(11, 15));

    // The SDK resumed with its old epoch: told epochChanged, it starts over at the new stream's first message.
    // (Its gateway may see the new stream while the promotion still copies into it, and report firstSeq 0.)
    await waitFor(() => got.length >= 25 || undefined, { timeoutMs: 30_000, what: "the SDK's messages of the new epoch" });
    expect(gaps).toHaveLength(1);
    expect(gaps[0]).toMatchObject({ type: "gap", channel: ch, expectedSeq: 11, epochChanged: true });
    expect(got).toEqual([...range(1, 10), ...range(1, 15)]);
    // A client resuming with a position of the old epoch gets the protocol's answer.
    const late = await socket(gw.b);
    const okLate = await late.sub(ch, { from: { seq: 11, epoch: oldEpoch } });
    expect(okLate).toMatchObject({ truncated: true, epochChanged: true, firstSeq: 1, lastSeq: 15, epoch: promoted.created });
    await late.waitForMsgs(15);
    expect(values(late.msgs)).toEqual(range(1, 15));
    // c reads the new stream from its own mirror, and so does a client moving there with b's position.
    const inC = await socket(gw.c);
    const okC = await inC.sub(ch, { from: { seq: 13, epoch: promoted.created } });
    expect(okC.epochChanged).toBeUndefined();
    await inC.waitForMsgs(3, 30_000);
    expect(values(inC.msgs)).toEqual([13, 14, 15]);

    // The old home comes back: its old stream is gone (deleted while it was away); its gateway, with
    // HOME_REGION=b, makes its mirror, and a client there resumes at b's position.
    await sc.regions.a.restart();
    gw.a = await regionGateway("a", "b");
    const a = await jsm("a");
    expect((await a.streams.info(STREAM)).cluster?.name).toBe("b");
    const mirrorA = await a.streams.info(`${STREAM}-a`);
    expect(mirrorA.config).toMatchObject({ mirror: { name: STREAM }, republish: { src: "ev.>", dest: "evlive.a.>" } });
    const inA = await socket(gw.a);
    const okA = await inA.sub(ch, { from: { seq: 14, epoch: promoted.created } });
    expect(okA.epochChanged).toBeUndefined();
    await publish(gw.a, ch, 16);
    await inA.waitForMsgs(3, 30_000);
    expect(values(inA.msgs)).toEqual([14, 15, 16]);
    await inC.waitForMsgs(4, 30_000);
    await waitFor(() => got.length >= 26 || undefined, { timeoutMs: 15_000, what: "the SDK's 16" });
    expect(got.at(-1)).toBe(16);
    expect(values(inC.msgs)).toEqual([13, 14, 15, 16]);
  }, 300_000);
});
