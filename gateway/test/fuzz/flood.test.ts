import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// @ts-expect-error -- untyped .mjs module shared with scripts/fuzz.mjs
import { frameArbitraries } from "../../../scripts/fuzz/arbitraries.mjs";
import { CLIENT_OPS } from "../../src/protocol/frames.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { ClientPool } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { metric } from "#testkit/metrics.js";

const { malformedText } = frameArbitraries(CLIENT_OPS);
const GOOD = 100;
const BAD = 100;
const FRAMES_PER_BAD = 100;
const MESSAGES = 200;
const MiB = 1_048_576;
let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool();

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, logLevel: "info" });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
});

describe("fuzz — malformed frames over real sockets", () => {
  it("10,000 malformed frames on 100 connections: no crash, 100 good clients lose nothing, memory settles", async () => {
    const good = await Promise.all(Array.from({ length: GOOD }, () => TestClient.connect(gw.wsUrl)));
    const bad = await Promise.all(Array.from({ length: BAD }, () => TestClient.connect(gw.wsUrl)));
    for (const c of [...good, ...bad]) clients.track(c);
    await Promise.all(good.map((c) => c.sub("flood.feed")));
    const rss = () => metric(gw.url, "process_resident_memory_bytes");
    const before = await rss();
    const frames: string[] = fc.sample(malformedText, { numRuns: BAD * FRAMES_PER_BAD, seed: 20_261_121 });

    const published: number[] = [];
    const publisher = (async () => {
      for (let i = 0; i < MESSAGES; i++) {
        const r = await httpPublish(gw.url, "flood.feed", { i });
        expect(r.status).toBe(201);
        published.push(r.body.seq as number);
      }
    })();
    // five rounds of 20 frames per bad connection, interleaved with the publishes
    for (let round = 0; round < 5; round++) {
      bad.forEach((c, k) => {
        for (let j = 0; j < FRAMES_PER_BAD / 5; j++) c.sendRaw(frames[k * FRAMES_PER_BAD + round * (FRAMES_PER_BAD / 5) + j]!);
      });
      await waitFor(() => published.length >= ((round + 1) * MESSAGES) / 6, { what: `publishes of round ${round}` });
    }
    await publisher;
    const after = await rss();

    for (const c of good) {
      await c.waitForMsgs(MESSAGES);
      expect(c.msgs.map((m) => m.seq)).toEqual(published); // every message, in order, once
      expect(c.msgs.map((m) => (m.data as { i: number }).i)).toEqual(Array.from({ length: MESSAGES }, (_, i) => i));
    }
    // the bad connections got answers (err frames), and none of them broke the process
    await waitFor(() => bad.every((c) => c.frames.length > 0 || !c.open), { what: "answers to the bad connections" });
    expect(bad.filter((c) => c.open).length).toBeGreaterThan(BAD * 0.9);
    expect(gw.process.exitCode).toBeNull();
    expect(gw.logs.some((l) => /exited; restarting/.test(String(l.msg)))).toBe(false);
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);

    for (const c of bad) c.close();
    const settled = await waitFor(
      async () => {
        const v = await rss();
        return v <= before + 64 * MiB ? v : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 500, what: `RSS back near ${Math.round(before / MiB)} MiB` },
    );
    console.log(`flood: RSS before ${Math.round(before / MiB)} MiB, after ${Math.round(after / MiB)} MiB, settled ${Math.round(settled / MiB)} MiB`);
  }, 90_000);
});
