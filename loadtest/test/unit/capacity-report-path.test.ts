// capacity:quick must not overwrite the committed full-run report (loadtest/results/capacity.md).
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error -- a plain .mjs module of the capacity runner, without type declarations
import { reportPath } from "../../capacity/report-path.mjs";

const dirs = { resultsDir: "/repo/loadtest/results", runDir: "/tmp/fgw-capacity-abc" };

describe("capacity report path — where run.mjs writes its report", () => {
  it("capacity report path — a full run writes the committed loadtest/results/capacity.md", () => {
    expect(reportPath({ quick: false }, dirs)).toBe("/repo/loadtest/results/capacity.md");
  });

  it("capacity report path — a --quick run writes into its own run folder, never the committed report", () => {
    expect(reportPath({ quick: true }, dirs)).toBe("/tmp/fgw-capacity-abc/capacity.md");
  });

  it("capacity report path — --out wins for either, relative to the working directory", () => {
    expect(reportPath({ quick: true, out: "x/quick.md" }, dirs)).toBe(resolve("x/quick.md"));
    expect(reportPath({ quick: false, out: "/tmp/full.md" }, dirs)).toBe("/tmp/full.md");
  });
});
