// The native engine (subtools/native, Go): `go vet` and its own tests through `go test` (which also read
// the shared vectors in subtools/test/vectors), and its snapshot format read back by the master's statistics.
// Real-server runs are in e2e-resilience (wildcard resume).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync, utimesSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { LatencyStats } from "../src/shared/mod.js";
import { nativeMissing } from "../src/procs.js";

const DIR = fileURLToPath(new URL("../native", import.meta.url));
const SCRIPT = fileURLToPath(new URL("../../scripts/build-native.sh", import.meta.url));
const go = (...args: string[]): string => execFileSync("go", args, { cwd: DIR, encoding: "utf8", timeout: 180_000, stdio: ["ignore", "pipe", "pipe"] });

describe("native engine", () => {
  it("native — go vet finds nothing, and the Go tests pass (shared vectors: frame scan, tracker, statistics, frame reader)", () => {
    expect(go("vet", "./...")).toBe("");
    expect(go("test", "-count=1", "./...")).toMatch(/^ok\s/m);
  });

  it("native — built by setup --test where the tests need it", () => {
    expect(nativeMissing()).toBeNull();
  });

  it("native — sub-cluster's on-demand build: built when missing, left alone when up to date, rebuilt when a source is newer", () => {
    const dir = mkdtempSync(join(tmpdir(), "sub-native-"));
    const bin = join(dir, "bin", "sub-native");
    const build = (): string =>
      execFileSync("bash", [SCRIPT], { env: { ...process.env, SUB_NATIVE_BIN: bin }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
    try {
      build();
      const built = statSync(bin);
      expect(built.mode & 0o111).not.toBe(0);
      build();
      expect(statSync(bin).mtimeMs).toBe(built.mtimeMs);
      utimesSync(bin, 1_000, 1_000); // older than every source
      build();
      expect(statSync(bin).mtimeMs).toBeGreaterThan(built.mtimeMs - 60_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("native — a snapshot of [value, count] pairs reads back with the exact figures and the same percentiles", () => {
    const direct = new LatencyStats();
    const values: number[] = [];
    for (let v = 1; v <= 5000; v += 7) direct.record(v);
    // Lowest values of HDR buckets (exact below 2048 µs, 1/1024 above), as sub-native sends them.
    const buckets = new Map<number, number>();
    for (let v = 1; v <= 5000; v += 7) {
      const shift = v < 2048 ? 0 : Math.floor(Math.log2(v)) - 10;
      const lo = (v >> shift) << shift;
      buckets.set(lo, (buckets.get(lo) ?? 0) + 1);
    }
    for (const [v, c] of buckets) values.push(v, c);
    const snap = { ...direct.toJSON(), histogram: "", values };
    const back = LatencyStats.fromJSON(snap);
    expect(back.count).toBe(direct.count);
    expect(back.meanUs).toBe(direct.meanUs);
    for (const p of [50, 90, 99, 99.9]) expect(back.percentileUs(p)).toBe(direct.percentileUs(p));
  });
});
