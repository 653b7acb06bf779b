// The soak run's smoke test: three minutes of churn against one real gateway (2 workers) on a real
// nats-server, sampled every 3 s, then the verdict. Fails when a sampled series grows, a table passes its
// bound, a worker's samples are missing, or the workload did not run. Writes into a temp dir, never into
// loadtest/results/.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const MAIN = resolve(process.cwd(), "dist/loadtest/soak/main.js");
const out = mkdtempSync(join(tmpdir(), "fgw-soak-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string; err: string; summary: Record<string, unknown> }> {
  return new Promise((done) => {
    const p = spawn(process.execPath, [MAIN, ...args], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const t = setTimeout(() => p.kill("SIGINT"), timeoutMs); // the run cleans up on SIGINT
    p.on("exit", (code) => {
      clearTimeout(t);
      let summary: Record<string, unknown> = {};
      try {
        summary = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}") as Record<string, unknown>;
      } catch {
        /* the run failed before its summary */
      }
      done({ code, out: stdout, err, summary });
    });
  });
}

describe("soak — steady churn against one gateway, no series grows", () => {
  it("soak — a 3-minute run passes, with samples from every worker", async () => {
    const r = await run(["--minutes", "3", "--warmup", "1.5", "--interval", "3", "--seed", "4242", "--out", out], 290_000);
    const why = `${r.out.slice(-4000)}\n${r.err.slice(-4000)}`;
    expect(existsSync(join(out, "soak.json")), why).toBe(true);
    const report = JSON.parse(readFileSync(join(out, "soak.json"), "utf8")) as {
      samples: { t: number; workers: { worker: string; pid: number; rssBytes: number; state: Record<string, number> }[] }[];
      slopes: { name: string }[];
    };
    expect(r.summary.failures, why).toEqual([]);
    expect(r.summary.ok, why).toBe(true);
    expect(r.code, why).toBe(0);
    // Every sample has both workers, each with its RSS, heap and table sizes.
    expect(report.samples.length).toBeGreaterThan(50); // 3 min, one every 3 s
    for (const s of report.samples) {
      expect(s.workers.map((w) => w.worker).sort()).toEqual(["1", "2"]);
      for (const w of s.workers) {
        expect(w.rssBytes).toBeGreaterThan(0);
        expect(w.state.heap_used_bytes).toBeGreaterThan(0);
        expect(w.state.hub_feeds).toBeGreaterThanOrEqual(0);
      }
    }
    const names = report.slopes.map((s) => s.name);
    for (const n of ["w1.rss_bytes", "w2.rss_bytes", "w1.open_fds", "w2.event_loop_lag_mean_ms", "nats.rss_bytes", "stream.consumers", "w1.ip_table_entries"])
      expect(names).toContain(n);
    expect(r.summary.received as number).toBeGreaterThan(1000);
    expect(readFileSync(join(out, "soak.md"), "utf8")).toMatch(/^# Soak run/);
  }, 300_000);
});
