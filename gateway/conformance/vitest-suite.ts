import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { PACKAGE_ROOT } from "../src/config/config.js";
import { loadScenarios, parseArgs } from "./cli.js";
import { startHarness, type GatewayHarness } from "./harness.js";
import { runScenario } from "./runner.js";

/**
 * Every scenario of scenarios/ as a vitest test against one real gateway, with the client-under-test that
 * `--client` would name (`typescript`, `kotlin` or a command line). A test file per SDK calls this once.
 */
export function describeConformance(clientArg: string): void {
  const { label, client } = parseArgs(["--client", clientArg]);
  const scenarios = loadScenarios(join(PACKAGE_ROOT, "gateway/conformance/scenarios"));
  let harness: GatewayHarness;
  beforeAll(async () => {
    harness = await startHarness();
  });
  afterAll(async () => {
    await harness?.close();
  });

  describe(`conformance — ${label}`, () => {
    for (const s of scenarios) {
      it(`conformance — ${s.name}: ${s.description}`, async () => {
        try {
          await runScenario(s, harness, client);
        } finally {
          await harness.reset();
        }
      }, 90_000);
    }
  });
}
