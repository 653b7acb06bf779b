import { readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const RESULTS = resolve(import.meta.dirname, "../../results");
const LIMIT_BYTES = 5 * 1024 * 1024;

function files(dir: string): { path: string; bytes: number }[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    return e.isDirectory() ? files(p) : [{ path: relative(RESULTS, p), bytes: statSync(p).size }];
  });
}

describe("loadtest/results — stays small", () => {
  it("results — the folder holds at most 5 MB (reports and charts; only the newest raw run of each kind)", () => {
    const all = files(RESULTS);
    const total = all.reduce((s, f) => s + f.bytes, 0);
    const biggest = all
      .sort((a, b) => b.bytes - a.bytes)
      .slice(0, 5)
      .map((f) => `${f.path} ${(f.bytes / 1024).toFixed(0)} KiB`);
    expect(total, `loadtest/results is ${(total / 1024 / 1024).toFixed(1)} MiB; biggest: ${biggest.join(", ")}`).toBeLessThanOrEqual(LIMIT_BYTES);
  });

  it("results — chaos raw runs are stored gzipped", () => {
    expect(files(RESULTS).filter((f) => /^chaos-.*\.json$/.test(f.path))).toEqual([]);
  });
});
