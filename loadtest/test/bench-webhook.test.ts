import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

const BENCH = resolve(process.cwd(), "dist/loadtest/bench/webhook.js");

describe("bench:webhook — runs end to end (a smoke run, no timing asserted)", () => {
  it("bench:webhook — a small run sends every event to the receiver, in id order with one batch in flight, and prints a row per leg", async () => {
    const p = spawn(process.execPath, [BENCH, "--events", "600", "--batch", "50", "--concurrency", "1,3", "--rounds", "1", "--no-write", "--json"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const code = await new Promise((done) => p.on("exit", done));
    expect(code, err).toBe(0);
    const r = JSON.parse(out.trim().split("\n").at(-1)!) as {
      rows: { concurrency: number; allReceived: boolean; inOrder: boolean; maxInFlight: number; eventsPerS: number }[];
    };
    expect(r.rows.map((x) => x.concurrency)).toEqual([1, 3]);
    for (const row of r.rows) expect(row.allReceived).toBe(true);
    expect(r.rows[0]).toMatchObject({ inOrder: true, maxInFlight: 1 });
    for (const row of r.rows) expect(row.eventsPerS).toBeGreaterThan(0);
  }, 90_000);
});
