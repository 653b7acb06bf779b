// End to end: the real sub-cluster and pub-cluster CLIs against a real redis-server and nats-server.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRedisServer, type RedisServerHandle } from "#testkit/redis-server.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { buildTools, PUB_CLI, run, runToEnd, SUB_CLI, waitConnected } from "./support/tools.js";
import type { SubResult } from "../src/result.js";

let redis: RedisServerHandle;
let nats: NatsServerHandle;
const dir = mkdtempSync(join(tmpdir(), "subtools-e2e-"));

beforeAll(async () => {
  [redis, nats] = (await Promise.all([startRedisServer(), startNatsServer(), buildTools()])) as [RedisServerHandle, NatsServerHandle, void];
});
afterAll(async () => {
  await Promise.all([redis?.stop(), nats?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

/** 2 subscriber processes × 10 clients; 2 publisher processes × 5 passes × 2 messages, on two channels. */
async function roundTrip(subTarget: string, pubTarget: string, port: number, channel: string): Promise<{ result: SubResult; subOut: string; pubOut: string }> {
  const json = join(dir, `${subTarget}.json`);
  const sub = run(SUB_CLI, ["-c", "2", "-n", "10", "--target", subTarget, "-p", String(port), "--channel", channel, "-d", "25", "--idle", "5", "--json", json]);
  await waitConnected(sub, 20);
  const pub = await runToEnd(PUB_CLI, [
    "-t",
    "50",
    "-n",
    "2",
    "-c",
    "2",
    "-p",
    "5",
    "--target",
    pubTarget,
    "--port",
    String(port),
    "--channel",
    channel,
    "--size",
    "256",
  ]);
  expect(pub.code, pub.out).toBe(0);
  const code = await sub.exited;
  expect(code, sub.out()).toBe(0);
  return { result: JSON.parse(readFileSync(json, "utf8")) as SubResult, subOut: sub.out(), pubOut: pub.out };
}

function expectComplete(r: SubResult, subOut: string): void {
  // 20 messages (2 processes × 5 passes × 2) to each of 20 clients.
  expect(r.counts).toMatchObject({
    clients: 20,
    everConnected: 20,
    received: 400,
    distinct: 400,
    expected: 400,
    lost: 0,
    duplicated: 0,
    outOfOrder: 0,
    endMarkers: 40,
    connectFailures: 0,
  });
  expect(r.stopReason).toBe("end markers received");
  expect(r.latency.count).toBe(400);
  expect(r.latency.minUs!).toBeGreaterThan(0);
  expect(r.latency.maxUs!).toBeGreaterThanOrEqual(r.latency.minUs!);
  for (const label of [
    "Total received: 400",
    "Lost: 0",
    "Duplicated: 0",
    "Out-of-order: 0",
    "\t MIN: ",
    "\t MAX: ",
    "\t MEAN: ",
    "\t HARMONIC MEAN: ",
    "\t p99: ",
    "CPU sub-1",
  ]) {
    expect(subOut).toContain(`[  cluster-master  ] \t${label}`);
  }
}

describe("load tools — end to end on raw brokers", () => {
  it("load tools — Redis pub/sub: every client gets every message, stopped by the end markers", async () => {
    const { result, subOut, pubOut } = await roundTrip("redis", "redis", redis.port, "e2e.redis");
    expectComplete(result, subOut);
    expect(pubOut).toContain("Published: 20 (acked 20, failed 0)");
    expect(pubOut).toContain("End markers: 2");
    expect(pubOut).toMatch(/\t ACK p99: [\d.]+ms/);
  });

  it("load tools — core NATS: every client gets every message, stopped by the end markers", async () => {
    const { result, subOut, pubOut } = await roundTrip("nats", "nats", nats.port, "e2e.nats");
    expectComplete(result, subOut);
    expect(pubOut).toContain("ACK: n/a (core NATS does not acknowledge publishes)");
  });

  it("load tools — merge adds the two hosts' results exactly and prints the same report", async () => {
    const a = JSON.parse(readFileSync(join(dir, "redis.json"), "utf8")) as SubResult;
    const b = JSON.parse(readFileSync(join(dir, "nats.json"), "utf8")) as SubResult;
    const { code, out } = await runToEnd(SUB_CLI, ["merge", join(dir, "redis.json"), join(dir, "nats.json")]);
    expect(code, out).toBe(0);
    expect(out).toContain("[  cluster-master  ] \tTotal received: 800");
    expect(out).toContain("[  cluster-master  ] \tLost: 0");
    const min = Math.min(a.latency.minUs!, b.latency.minUs!);
    expect(out).toContain(`\t MIN: ${Number((min / 1000).toFixed(3))}ms`);
  });

  it("load tools — unreachable server: connection failures are counted and the run ends by its duration", async () => {
    const { code, out } = await runToEnd(SUB_CLI, ["-c", "1", "-n", "3", "--target", "redis", "-p", "1", "-d", "8", "--quiet"]);
    expect(code, out).toBe(2);
    expect(out).toMatch(/first error: .*ECONNREFUSED/);
    expect(out).toMatch(/connect failures [1-9]/);
    expect(out).toContain("stopped by duration");
  });
});
