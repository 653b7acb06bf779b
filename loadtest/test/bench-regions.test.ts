import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const BENCH = resolve(process.cwd(), "dist/loadtest/bench/regions/main.js");

function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const p = spawn(process.execPath, [BENCH, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.on("exit", (code) => done({ code, out, err }));
  });
}

describe("bench:regions — runs end to end (a smoke run: the resume's counts asserted, no latency)", () => {
  it("bench:regions — --quick moves a client from region a to b with nothing lost or duplicated, and ends with its JSON line", async () => {
    const r = await run(["--quick", "--no-write"]);
    expect(r.code, r.err).toBe(0);
    const last = JSON.parse(r.out.trim().split("\n").at(-1)!) as Record<string, number | string>;
    expect(last).toMatchObject({ bench: "regions", oneWayDelayMs: 40, resumeLost: 0, resumeDuplicated: 0, resumeOutOfOrder: 0, resumeMismatched: 0 });
    expect(last.deliverySamples).toBeGreaterThan(0);
    expect(last.mirrorSamples).toBeGreaterThan(0);
    for (const k of ["deliveryExcessP99Ms", "mirrorLagP99Ms"]) expect(typeof last[k], k).toBe("number");
  }, 180_000);

  it("bench:regions — --delay and --rtt together are refused with a message naming both", async () => {
    const r = await run(["--delay", "10", "--rtt", "20"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--delay and --rtt both set the link's delay/);
  });
});
