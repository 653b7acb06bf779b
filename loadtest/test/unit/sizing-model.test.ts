// The capacity model's arithmetic (loadtest/sizing/model.ts) and how it reads its costs (costs.ts).
import { mkdtempSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { natsPlan, plan, predictBench, type Costs, type Shape, type Workload } from "../../sizing/model.js";
import { costsOf, fitCpu, publishCosts, readCosts } from "../../sizing/costs.js";
import { errorOf } from "../../sizing/validate.js";
import type { MillionResult } from "../../bench/million-report.js";

const KiB = 1024;
const MiB = 1048576;
const GiB = 2 ** 30;

/** Round figures, so that every expectation below can be worked out by hand. */
const costs: Costs = {
  gatewayBytesPerConn: 4 * KiB,
  kernelBytesPerSocket: 4 * KiB,
  workerBytes: 64 * MiB,
  primaryBytes: 64 * MiB,
  usPerDelivery: 10,
  idleCoresPerWorker: 0.01,
  usPerPublish: 20,
  natsUsPerPublish: 10,
  natsUsPerWorkerDelivery: 10,
};
const shape: Shape = { coresPerInstance: 16, memoryBytesPerInstance: 32 * GiB, fdLimit: 1_048_576, utilisation: 0.5, natsCoresPerServer: 8, replicas: 3 };
const idle = (connections: number): Workload => ({ connections, channels: 1, publishRate: 0, fanout: 0, payloadBytes: 100 });

describe("capacity model — instances from the measured costs", () => {
  it("idle sockets: memory decides; 8 KiB a connection on 16 GiB usable an instance", () => {
    // Per instance: 64 MiB primary + 16 workers × 64 MiB = 1,088 MiB fixed; the rest at 8 KiB a connection.
    const usable = 16 * GiB - 1088 * MiB;
    const perInstance = Math.floor(usable / (8 * KiB));
    expect(plan(costs, idle(perInstance), shape).instances).toBe(1);
    const p = plan(costs, idle(perInstance + 1), shape);
    expect(p.instances).toBe(2);
    expect(p.first).toBe("memory");
    expect(p.memory.bytes).toBe(1088 * MiB + Math.ceil((perInstance + 1) / 2) * 8 * KiB);
  });

  it("deliveries: CPU decides; 10 µs each plus 0.16 cores of idle workers on 8 usable cores", () => {
    // 1 instance: (8 − 0.16) cores / 10 µs = 784,000 deliveries/s.
    const w = (rate: number): Workload => ({ connections: 10_000, channels: 1, publishRate: rate, fanout: 10_000, payloadBytes: 100 });
    // Publishes cost 20 µs each too: 78 msgs/s × 10,000 = 780,000 deliveries (7.8 cores) + 78 × 20 µs.
    expect(plan(costs, w(78), shape).instances).toBe(1);
    const p = plan(costs, w(79), shape);
    expect(p.instances).toBe(2);
    expect(p.first).toBe("CPU");
    expect(p.deliveriesPerSecond).toBe(790_000);
    expect(p.cpu.cores).toBeCloseTo((395_000 * 10 + 79 * 10) / 1e6 + 0.16, 9);
  });

  it("open files: a low limit makes more workers, and the workers' idle memory then counts", () => {
    const low: Shape = { ...shape, fdLimit: 20_000 };
    const p = plan(costs, idle(1_000_000), low);
    // 1,000,000 / 19,000 sockets per worker (the workers' cap, WORKER_MAX_CONNECTIONS=auto: the limit less 5 %)
    // → 53 workers an instance when one instance holds them all.
    expect(p.instances).toBe(1);
    expect(p.workersPerInstance).toBe(53);
    expect(p.files.perProcess).toBeLessThanOrEqual(20_000);
    expect(p.memory.bytes).toBe(64 * MiB + 53 * 64 * MiB + 1_000_000 * 8 * KiB);
  });

  it("NATS: R3 stores each publish three times; workers each get every message of a channel they hold; one leader per stream", () => {
    const w: Workload = { connections: 1_000_000, channels: 100, publishRate: 1_000, fanout: 50_000, payloadBytes: 100 };
    const n = natsPlan(costs, w, shape, 64);
    expect(n.workerDeliveriesPerSecond).toBe(64_000); // min(fan-out, workers) per message
    expect(n.cores).toBeCloseTo((1_000 * 10 * 3 + 64_000 * 10) / 1e6, 9);
    expect(n.servers).toBe(3);
    expect(n.leaderOverloaded).toBe(false);
    // 6,400,000 messages/s to workers: 65 cores, spread over the cluster (odd server count, 8 cores at 50 %).
    const hot = natsPlan(costs, { ...w, publishRate: 100_000 }, shape, 64);
    expect(hot.cores).toBeCloseTo((100_000 * 10 * 3 + 6_400_000 * 10) / 1e6, 9);
    expect(hot.servers).toBe(17);
    expect(hot.leaderCores).toBeCloseTo(1, 9);
    expect(hot.leaderOverloaded).toBe(false);
    // A stream's leader stores every publish: 500,000 a second at 10 µs is 5 cores, more than 4 usable.
    expect(natsPlan(costs, { ...w, publishRate: 500_000 }, shape, 64).leaderOverloaded).toBe(true);
    expect(hot.servers % 2).toBe(1);
  });

  it("refuses a fan-out larger than the connections", () => {
    expect(() => plan(costs, { connections: 10, channels: 1, publishRate: 1, fanout: 11, payloadBytes: 1 }, shape)).toThrow(RangeError);
  });

  it("the bench prediction: fixed workers, every socket's two ends on this machine, CPU at the rate", () => {
    const p = predictBench(costs, 100_000, 6, 1);
    expect(p.gatewayRssMB).toBeCloseTo(64 + 6 * 64 + (100_000 * 4) / 1024, 9);
    expect(p.kernelMB).toBeCloseTo((2 * 100_000 * 4) / 1024, 9);
    expect(p.steadyCpuPct).toBeCloseTo((6 * 0.01 + 100_000 * 10e-6) * 100, 9);
    expect(errorOf(120, 100)).toBeCloseTo(0.2, 12);
    expect(errorOf(80, 100)).toBeCloseTo(-0.2, 12);
  });
});

describe("capacity model — costs read from the results", () => {
  const million = {
    bench: "million",
    at: "2026-11-28T12:00:00.000Z",
    clients: 100_000,
    workers: 4,
    idleCpuPct: 4,
    idle: { workerMeanMB: 64, primaryMB: 70 },
    rss: { perConnB: 3_000 },
    kernel: { perSocketB: 4_200 },
    steady: { rate: 1, gatewayCpuPct: 104, natsCpuS: 0.3, messages: 60 },
  } as unknown as MillionResult;
  const publish =
    "# x\n\n## 2026-11-25T18:24:14Z — run\n\n| path | a | b | c | d |\n|---|---|---|---|---|\n| `POST /v1/publish/{ch}`, 64 connections (wrk) | 41,628 | 0.73 | 24 µs | 11.5 µs | 8 µs |\n";

  it("per delivery: the steady phase's CPU less the idle CPU, over the deliveries a second", () => {
    const c = costsOf(million, { gatewayUs: 24, natsUs: 11.5 });
    expect(c.usPerDelivery).toBeCloseTo(((1.04 - 0.04) * 1e6) / 100_000, 9); // 10 µs
    expect(c.idleCoresPerWorker).toBeCloseTo(0.01, 12);
    expect(c.workerBytes).toBe(64 * MiB);
    expect(publishCosts(publish)).toEqual({ at: "2026-11-25T18:24:14Z", gatewayUs: 24, natsUs: 11.5 });
  });

  it("names the bench that makes each missing figure, and reads the newest result when both are there", () => {
    const dir = mkdtempSync(join(tmpdir(), "sizing-"));
    const missing = readCosts(dir, dir);
    expect("missing" in missing && missing.missing.join("\n")).toMatch(/bench -- million[\s\S]*bench:publish/);
    writeFileSync(join(dir, "million.json"), JSON.stringify(million));
    writeFileSync(join(dir, "publish.md"), publish);
    mkdirSync(join(dir, "validation"));
    writeFileSync(join(dir, "validation/million-10000.json"), JSON.stringify({ ...million, at: "2026-11-28T13:00:00.000Z", clients: 10_000 }));
    const read = readCosts(dir, dir);
    expect("costs" in read && read.sources[0]!.file).toBe("validation/million-10000.json");
    const without = readCosts(dir, dir, [join(dir, "validation/million-10000.json")]);
    expect("costs" in without && without.sources[0]!.file).toBe("million.json");
  });

  /** A run whose steady phase cost `workers × a + deliveries/s × b` exactly. */
  const run = (at: string, workers: number, clients: number, rate: number, a = 0.006, bUs = 20): MillionResult =>
    ({
      ...million,
      at,
      workers,
      clients,
      steady: { ...million.steady, rate, gatewayCpuPct: (workers * a + (clients * rate * bUs) / 1e6) * 100 },
    }) as MillionResult;

  it("CPU: a least-squares fit over the runs finds a worker's share and a delivery's cost apart", () => {
    const runs = [run("a", 2, 10_000, 1), run("b", 6, 100_000, 1 / 3), run("c", 40, 500_000, 1 / 16)];
    const fit = fitCpu(runs)!;
    expect(fit.idleCoresPerWorker).toBeCloseTo(0.006, 9);
    expect(fit.usPerDelivery).toBeCloseTo(20, 6);
    expect(fit.runs).toBe(3);
    // Fewer than three runs, or one worker count only: no fit.
    expect(fitCpu(runs.slice(0, 2))).toBeUndefined();
    expect(fitCpu([run("a", 6, 10_000, 1), run("b", 6, 100_000, 0.5), run("c", 6, 50_000, 1)])).toBeUndefined();
  });

  it("readCosts takes CPU from the fit over every run once (million.json is a copy), memory from the newest", () => {
    const dir = mkdtempSync(join(tmpdir(), "sizing-"));
    writeFileSync(join(dir, "publish.md"), publish);
    mkdirSync(join(dir, "validation"));
    const newest = run("2026-11-28T15:00:00.000Z", 40, 500_000, 1 / 16);
    writeFileSync(join(dir, "million.json"), JSON.stringify(newest));
    writeFileSync(join(dir, "validation/million-500000.json"), JSON.stringify(newest));
    writeFileSync(join(dir, "validation/million-10000.json"), JSON.stringify(run("2026-11-28T13:00:00.000Z", 2, 10_000, 1)));
    const two = readCosts(dir, dir);
    // Two distinct runs: no fit, one run's figures.
    expect("costs" in two && two.costs.usPerDelivery).toBeCloseTo(costsOf(newest, { gatewayUs: 24, natsUs: 11.5 }).usPerDelivery, 9);
    writeFileSync(join(dir, "validation/million-100000.json"), JSON.stringify(run("2026-11-28T14:00:00.000Z", 6, 100_000, 1 / 3)));
    const read = readCosts(dir, dir);
    if (!("costs" in read)) throw new Error("costs missing");
    expect(read.costs.usPerDelivery).toBeCloseTo(20, 6);
    expect(read.costs.idleCoresPerWorker).toBeCloseTo(0.006, 9);
    expect(read.costs.gatewayBytesPerConn).toBe(newest.rss.perConnB);
    expect(read.sources.at(-1)!.what).toBe("CPU per worker and per delivery fitted over 3 bench:million runs");
  });
});
