// Frames built to allocate, against a real gateway (one worker) and nats-server: nested MessagePack array
// headers declaring more elements than the frame has bytes are refused before decoding, the worker lives on
// (same pid, another socket keeps receiving) and its peak memory stays bounded. Each case prints the worker's
// peak RSS and the longest ping round trip of a second client while the frame was handled (the loop's stall).
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { waitFor } from "#testkit/wait.js";
import { httpPublish, type TestClient } from "#testkit/ws-client.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
const clients = new ClientPool(() => gw.wsUrl);
const uniq = uniqueNames();

/** Peak resident memory of a process so far (VmHWM), in MiB. */
const peakMiB = (pid: number): number => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]) / 1024;

/** `levels` nested array-16 headers (0xdc), each declaring `each` elements: 3 bytes a level, nothing else. */
function nestedArrays(levels: number, each: number): Buffer {
  const b = Buffer.alloc(levels * 3);
  for (let i = 0; i < levels; i++) {
    b[i * 3] = 0xdc;
    b.writeUInt16BE(each, i * 3 + 1);
  }
  return b;
}

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1 });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
});

/** Pings from `c` back to back until `until` settles; the longest round trip (ms). */
async function longestPing(c: TestClient, until: Promise<unknown>): Promise<number> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  let longest = 0;
  while (!done && c.open) {
    const t = performance.now();
    await c.request({ op: "ping" }, 30_000).catch(() => undefined);
    longest = Math.max(longest, performance.now() - t);
  }
  return longest;
}

describe("hostile frames — MessagePack frames built to allocate", () => {
  it.each([
    ["the issue's 63,003-byte frame: 21,000 levels declaring 16,380 each", 16_380],
    ["21,000 levels declaring 8,000 each", 8_000],
  ])("hostile frames — %s: an err frame, the worker lives and its peak memory stays bounded", async (_, each) => {
    const [pid] = gw.workerPids();
    expect(pid).toBeGreaterThan(0);
    const ch = uniq("hostile.");
    const bystander = await clients.open();
    await bystander.sub(ch);
    const attacker = await clients.open({ msgpack: true });
    const before = peakMiB(pid!);
    const frame = nestedArrays(21_000, each);
    expect(frame.length).toBe(63_000);
    const sent = performance.now();
    attacker.sendRaw(frame);
    const answered = waitFor(() => attacker.frames.find((f) => f.op === "err") ?? (attacker.open ? undefined : { op: "closed" }), {
      timeoutMs: 30_000,
      what: "an answer to the frame",
    });
    const stall = await longestPing(bystander, answered);
    const err = await answered;
    const tookMs = performance.now() - sent;
    const after = peakMiB(pid!);
    console.log(
      `${each}/level: answered in ${tookMs.toFixed(0)} ms; longest ping ${stall.toFixed(0)} ms; worker peak RSS ${before.toFixed(0)} -> ${after.toFixed(0)} MiB`,
    );
    expect(err).toMatchObject({ op: "err", code: "bad_json" });
    expect(String(err.message)).toMatch(/declares/);
    expect(gw.workerPids()).toEqual([pid]);
    expect(after).toBeLessThan(400);
    expect(after - before).toBeLessThan(64);
    expect(stall).toBeLessThan(1_000);
    // The same worker still serves both sockets.
    expect(await attacker.request({ op: "ping" })).toMatchObject({ op: "pong" });
    await httpPublish(gw.url, ch, { after: "hostile frame" });
    const [m] = await bystander.waitForMsgs(1);
    expect(m!.data).toEqual({ after: "hostile frame" });
  });
});
