// Smoke runs of the consumer-free design's scale benchmarks at a small size: they run end to end against
// real servers and print their verdict lines. Nothing is timed; the verdicts that do not depend on the
// machine's speed (errors, consumers, completeness) are asserted.
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";

function run(script: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const p = spawn(process.execPath, [resolve(process.cwd(), `dist/loadtest/bench/${script}`), ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    p.on("exit", (code) => done({ code, out, err }));
  });
}

describe("scale benchmarks — small runs end to end", () => {
  it("bench:channels — two alternating rounds on JetStream and Redis: 0 errors, 0 consumers, every publish delivered, each round's ratio listed", async () => {
    const r = await run("channels.js", ["--channels", "200", "--idle", "1", "--messages", "100", "--rate", "200", "--rounds", "2", "--no-write"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/\| errors on JetStream at 200 channels \| 0 \| .* \| yes \|/);
    expect(r.out).toMatch(/\| JetStream consumers \(end, max sampled\) \| 0, 0 \| 0 \| yes \|/);
    expect(r.out).toMatch(/\| delivered \/ expected on JetStream \| 100 \/ 100 \| all, no duplicate \| yes \|/);
    expect(r.out).toMatch(/subscribe-ack p50 JetStream \/ Redis \d+\.\d\d \(round 1\), \d+\.\d\d \(round 2\); tables from round [12], the median/);
  }, 120_000);

  it("bench:storm — sockets resuming one channel and many channels at once: every message once, in order, no errors, 0 consumers", async () => {
    const r = await run("storm.js", ["--sockets", "300", "--channels", "30", "--history", "200", "--back", "20", "--max-seconds", "60", "--no-write"]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/\*\*sockets with exactly every message once, in order\*\* \| \*\*300 \/ 300\*\* \| \*\*300 \/ 300\*\* \|/);
    expect(r.out).toMatch(/every socket complete, in order, once; no errors; 0 consumers: yes/);
  }, 120_000);

  it("bench:channels — a bad --rounds is refused with a message naming the option", async () => {
    const r = await run("channels.js", ["--rounds", "0", "--no-write"]);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--rounds must be at least 1, not 0/);
  });
});
