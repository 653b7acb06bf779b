// The DELTA_* settings (config/sections/deltas.ts) reach the worker's delta rules, against a real gateway and
// nats-server: with DELTA_MAX_PAYLOAD_BYTES at 1 KiB a 2 KB scoreboard (a delta with the defaults, see
// deltas.test.ts) goes full while a small document of the same gateway is still a delta; with
// DELTA_MAX_CHANNELS_PER_SUBSCRIPTION at 2 a wildcard taking turns over three channels gets only full
// messages, and over two channels deltas. A bad value exits 1 naming the setting.
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { applied, kinds, scoreboards } from "#testkit/deltas.js";
import { CLI, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { httpPublish } from "#testkit/ws-client.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool(() => gw.wsUrl);
const uniq = uniqueNames();

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    args: ["--feed-linger", "100ms", "--delta-max-payload-bytes", "1KiB"],
    env: { DELTA_MAX_CHANNELS_PER_SUBSCRIPTION: "2" },
  });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
});

/** `n` documents of about 400 bytes, one field changed from one to the next. */
const smallDocs = (n: number, tag = ""): unknown[] =>
  Array.from({ length: n }, (_, i) => ({ tag, round: i, players: Array.from({ length: 10 }, (_, p) => ({ id: p, name: `player-${p}` })) }));

describe("delta limits — the DELTA_* settings on a real gateway", () => {
  it("delta limits — over DELTA_MAX_PAYLOAD_BYTES every message is full; under it the same gateway sends deltas", async () => {
    const big = uniq("dll.big.");
    const small = uniq("dll.small.");
    const c = await clients.open();
    const s = await clients.open();
    await c.sub(big, { delta: "fossil" });
    await s.sub(small, { delta: "fossil" });
    const [bigDocs, smallOnes] = [scoreboards(6, 11), smallDocs(6)];
    expect(JSON.stringify(bigDocs[0]).length).toBeGreaterThan(1_024);
    expect(JSON.stringify(smallOnes[0]).length).toBeLessThan(1_024);
    for (let i = 0; i < 6; i++) {
      await httpPublish(gw.url, big, bigDocs[i]);
      await httpPublish(gw.url, small, smallOnes[i]);
    }
    await c.waitForMsgs(6);
    await s.waitForMsgs(6);
    expect(kinds(c)).toBe("FFFFFF");
    expect(c.msgs.map((m) => m.data)).toEqual(bigDocs);
    expect(kinds(s)).toBe("Fddddd");
    expect(applied(s)).toEqual(smallOnes);
  });

  it("delta limits — past DELTA_MAX_CHANNELS_PER_SUBSCRIPTION a wildcard's channels are forgotten and go full", async () => {
    const three = uniq("dll.three.");
    const two = uniq("dll.two.");
    const c3 = await clients.open();
    const c2 = await clients.open();
    await c3.sub(`${three}.*`, { delta: "fossil" });
    await c2.sub(`${two}.*`, { delta: "fossil" });
    const docs = ["a", "b", "c"].map((tag) => smallDocs(3, tag));
    for (let i = 0; i < 3; i++)
      for (const [k, tag] of ["a", "b", "c"].entries()) {
        await httpPublish(gw.url, `${three}.${tag}`, docs[k]![i]);
        if (tag !== "c") await httpPublish(gw.url, `${two}.${tag}`, docs[k]![i]);
      }
    await c3.waitForMsgs(9);
    await c2.waitForMsgs(6);
    // Taking turns over three channels with room for two: each channel was forgotten before its next message.
    expect(kinds(c3)).toBe("F".repeat(9));
    expect(kinds(c2)).toBe("FFdddd");
    expect(applied(c2)).toEqual([docs[0]![0], docs[1]![0], docs[0]![1], docs[1]![1], docs[0]![2], docs[1]![2]]);
  });

  it("delta limits — a bad DELTA_* value exits 1 with a message naming the setting", () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0"], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, DELTA_MAX_CHANNELS_PER_SUBSCRIPTION: "5000" },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("invalid DELTA_MAX_CHANNELS_PER_SUBSCRIPTION (--delta-max-channels-per-subscription): 5000 must be between 1 and 1000");
  });
});
