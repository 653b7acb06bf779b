import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { appendSection, commandLine, reportPath, RESULTS_DIR, ROOT, sibling, writeReport } from "../../kit/results.js";

const dir = mkdtempSync(join(tmpdir(), "fgw-kit-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("bench kit — results", () => {
  it("results — the root is the repository, from source as from dist/", () => {
    expect(readFileSync(join(ROOT, "package.json"), "utf8")).toMatch(/"name": "fanout-gateway"/);
    expect(RESULTS_DIR).toBe(join(ROOT, "loadtest/results"));
  });

  it("results — where a report goes: the bench's file by default, --out elsewhere, nothing with --no-write or a quick run without --out", () => {
    expect(reportPath({}, "storm.md")).toBe(join(RESULTS_DIR, "storm.md"));
    expect(reportPath({ out: join(dir, "x.md") }, "storm.md")).toBe(join(dir, "x.md"));
    expect(reportPath({ quick: true, out: join(dir, "x.md") }, "storm.md")).toBe(join(dir, "x.md"));
    expect(reportPath({ quick: true }, "storm.md")).toBeUndefined();
    expect(reportPath({ "no-write": true, out: join(dir, "x.md") }, "storm.md")).toBeUndefined();
    expect(sibling("/a/b/tools.md", ".json")).toBe("/a/b/tools.json");
  });

  it("results — a report is written whole (folders made); a section file gets its heading once and one section per run", () => {
    const report = join(dir, "sub/r.md");
    writeReport(report, "one");
    writeReport(report, "two");
    expect(readFileSync(report, "utf8")).toBe("two");
    const log = join(dir, "log.md");
    appendSection(log, "# heading", "## run 1");
    appendSection(log, "# heading", "## run 2");
    expect(readFileSync(log, "utf8")).toBe("# heading\n\n## run 1\n\n## run 2\n");
  });

  it("results — the command line that reproduces a run quotes only what needs it", () => {
    expect(commandLine("replay", [])).toBe("npm run bench -- replay");
    expect(commandLine("replay", ["--rounds", "3", "--out", "a b.md"])).toBe('npm run bench -- replay --rounds 3 --out "a b.md"');
  });
});
