import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { BUNDLE_OPTIONS } from "../../../scripts/bundle-client.mjs";

/** Most bytes the browser bundle (minified, gzipped at level 9) may take. Raise it on purpose, not by drift. */
const BUDGET_BYTES = 11_520;

describe("size — the browser bundle stays within its budget", () => {
  it("size — the SDK bundled and minified as the gateway serves it gzips to at most the budget, which the README states", async () => {
    const r = await build({ ...BUNDLE_OPTIONS, write: false, outfile: "client.js" });
    const js = r.outputFiles!.find((f) => f.path.endsWith(".js"))!.contents;
    const gz = gzipSync(js, { level: 9 }).length;
    console.log(`client bundle: ${js.length} bytes minified, ${gz} bytes gzipped (budget ${BUDGET_BYTES})`);
    expect(js.length).toBeGreaterThan(5_000); // the whole SDK, not an empty entry
    expect(gz).toBeLessThanOrEqual(BUDGET_BYTES);
    const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
    expect(readme).toContain(`budget: ${BUDGET_BYTES.toLocaleString("en")} bytes`);
  });
});
