import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const BENCH = resolve(process.cwd(), "dist/loadtest/bench/replay.js");

function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const p = spawn(process.execPath, [BENCH, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    p.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    p.on("exit", (code) => done({ code, out, err }));
  });
}

describe("bench:replay — runs end to end (a smoke run, no timing asserted)", () => {
  it("bench:replay — a small run replays every message through a real gateway and prints the per-round table and the ratio", async () => {
    const r = await run(["--messages", "2000", "--rounds", "2", "--warmup", "0"]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/\| 2 \| [\d,]+ \| [\d,]+ \| \d+\.\d{3} \|/);
    expect(r.out).toMatch(/ratio socket\/raw: median of rounds \d+\.\d{3}/);
  }, 60_000);

  it("bench:replay — the ws client engine replays every message too, and the header names the engine", async () => {
    const r = await run(["--messages", "1000", "--rounds", "1", "--warmup", "0", "--engine", "ws"]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/client engine ws/);
    expect(r.out).toMatch(/\| 1 \| [\d,]+ \| [\d,]+ \| \d+\.\d{3} \|/);
  }, 60_000);

  it("bench:replay — an unknown client engine is refused with a message naming the option", async () => {
    const r = await run(["--engine", "carrier-pigeon"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--engine must be one of lean, ws, not "carrier-pigeon"/);
  });

  it("bench:replay — an unknown layout is refused with a message naming the option", async () => {
    const r = await run(["--layout", "sideways"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--layout must be one of shared, pinned, not "sideways"/);
  });
});
