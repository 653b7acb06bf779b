// The chaos run's smoke test: a one-minute run (--quick) with every fault kind of the schedule against three
// real gateway instances on a real 3-node NATS cluster, then the checker. Fails on any loss, duplicate,
// reorder or missing acked publish the checker reports (the run exits 1 and prints the counts).
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { VIOLATION_KEYS } from "../chaos/checker.js";

const MAIN = resolve(process.cwd(), "dist/loadtest/chaos/main.js");
const COUNTS = [...VIOLATION_KEYS, "webhookLost", "webhookOutOfOrder"];
const KINDS = ["worker-kill", "primary-kill", "rolling-restart", "nats-kill", "nats-pause", "link-stall", "link-delay", "client-burst", "client-stall"];

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string; err: string; summary: Record<string, unknown> }> {
  return new Promise((done) => {
    const p = spawn(process.execPath, [MAIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const t = setTimeout(() => p.kill("SIGINT"), timeoutMs); // the run cleans up on SIGINT
    p.on("exit", (code) => {
      clearTimeout(t);
      const last = out.trim().split("\n").at(-1) ?? "{}";
      let summary: Record<string, unknown> = {};
      try {
        summary = JSON.parse(last) as Record<string, unknown>;
      } catch {
        /* the run failed before its summary */
      }
      done({ code, out, err, summary });
    });
  });
}

describe("chaos — fault-injection run with the delivery checker", () => {
  it("chaos — a quick run with every fault kind loses, duplicates and reorders nothing", async () => {
    const r = await run(["--quick", "--seed", "2311"], 150_000);
    const why = `${r.out.slice(-6000)}\n${r.err.slice(-3000)}`;
    for (const k of COUNTS) expect(r.summary[k], `${k}\n${why}`).toBe(0);
    expect(r.code, why).toBe(0);
    expect(Object.keys(r.summary.faultsByKind as object).sort()).toEqual([...KINDS].sort());
    expect(r.summary.messages as number).toBeGreaterThan(300);
    expect(r.summary.notCaughtUp).toBe(0);
    // The webhook receiver got events (every reconnect records some) and the report shows its two counts.
    expect((r.summary.webhook as { received: number }).received).toBeGreaterThan(0);
    expect(r.out).toMatch(/\| webhook events lost \| 0 \|/);
    expect(r.out).toMatch(/\| webhook events out of order \(per channel\) \| 0 \|/);
  }, 170_000);

  it("chaos — --regions: a quick run on three regions with region faults loses, duplicates and reorders nothing", async () => {
    const r = await run(["--quick", "--regions", "--seed", "11", "--no-write"], 200_000);
    const why = `${r.out.slice(-6000)}\n${r.err.slice(-3000)}`;
    // Every count but durableDuplicated: when a region's only node (holding the R1 consumer) is killed right
    // after a delivery, JetStream forgets it; the gateway flags the repeat on the same socket, but one on a new
    // socket (the client moved meanwhile) can come unflagged (chaos-findings.md, finding 7). Nothing may be
    // lost, and resuming subscribers may see nothing twice.
    for (const k of COUNTS.filter((c) => c !== "durableDuplicated")) expect(r.summary[k], `${k}\n${why}`).toBe(0);
    expect(r.summary.notCaughtUp, why).toBe(0);
    const kinds = Object.keys(r.summary.faultsByKind as object);
    for (const k of ["region-kill", "region-cut", "region-delay", "region-move", "region-split"]) expect(kinds, why).toContain(k);
    expect(kinds).not.toContain("nats-kill");
    expect(r.summary.messages as number).toBeGreaterThan(300);
  }, 220_000);

  it("chaos — --regions refuses the cluster's NATS node faults, and region faults need --regions", async () => {
    const a = await run(["--regions", "--kinds", "nats-kill"], 30_000);
    expect(a.code).toBe(2);
    expect(a.err).toMatch(/--kinds nats-kill: not in a --regions run/);
    const b = await run(["--kinds", "region-cut"], 30_000);
    expect(b.code).toBe(2);
    expect(b.err).toMatch(/--kinds region-cut: needs --regions/);
  });

  it("chaos — a message missing from a subscriber's log makes the run fail with lost 1", async () => {
    const r = await run(["--quick", "--minutes", "0.15", "--kinds", "client-burst", "--seed", "5", "--sabotage"], 90_000);
    expect(r.summary.lost, r.err.slice(-3000)).toBe(1);
    expect(r.summary.ok).toBe(false);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/\| ws-\S+ \| lost \| chaos5\.\S+ \| \d+ \|/);
  }, 100_000);
});
