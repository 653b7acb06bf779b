import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseOptions } from "../../bench/jetstream/options.js";
import { FlagError } from "../../kit/flags.js";
import { RESULTS_DIR } from "../../kit/results.js";

const dir = mkdtempSync(join(tmpdir(), "fgw-js-opts-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("bench:jetstream — options on the kit", () => {
  it("jetstream options — a full run writes jetstream.* in loadtest/results; --quick writes nothing unless --out is given", () => {
    expect(parseOptions([])).toMatchObject({ outDir: RESULTS_DIR, name: "jetstream", rounds: 3, quick: false, chart: true });
    expect(parseOptions(["--quick"])).toMatchObject({ outDir: null, rounds: 1, chart: false });
  });

  it("jetstream options — --out takes a directory (as before the kit) or the report's file, whose name becomes the base name", () => {
    expect(parseOptions(["--quick", "--out", dir])).toMatchObject({ outDir: dir, name: "jetstream" });
    expect(parseOptions(["--out", join(dir, "partial.md")])).toMatchObject({ outDir: dir, name: "partial" });
  });

  it("jetstream options — --only and --target take only known values; a bad one is a flag error", () => {
    expect([...parseOptions(["--only", "003,paths"]).groups]).toEqual(["003", "paths"]);
    expect(parseOptions(["--target", "single"]).targets).toEqual(["single"]);
    expect(() => parseOptions(["--only", "009"])).toThrow(FlagError);
    expect(() => parseOptions(["--rounds", "21"])).toThrow(/--rounds must be at most 20/);
    expect(() => parseOptions(["--name", "../x"])).toThrow(/--name must be a file name/);
  });
});
