import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { PACKAGE_ROOT } from "../src/config/config.js";
import { loadScenarios, parseArgs } from "./cli.js";
import { startHarness, type GatewayHarness } from "./harness.js";
import { ClientPool, runScenario } from "./runner.js";

/**
 * Every scenario of scenarios/ as a vitest test against one real gateway, with the client-under-test that
 * `--client` would name (`typescript`, `kotlin` or a command line), its processes kept across scenarios when
 * the adapter allows. A test file per SDK calls this once.
 */
export function describeConformance(clientArg: string): void {
  const { label, client } = parseArgs(["--client", clientArg]);
  const scenarios = loadScenarios(join(PACKAGE_ROOT, "gateway/conformance/scenarios"));
  // Adapter processes live across scenarios when the adapter answers `reset` (README.md "Reuse").
  const pool = new ClientPool(client);
  let harness: GatewayHarness;
  beforeAll(async () => {
    harness = await startHarness();
  });
  afterAll(async () => {
    await pool.close();
    await harness?.close();
  });

  describe(`conformance — ${label}`, () => {
    for (const s of scenarios) {
      it(`conformance — ${s.name}: ${s.description}`, async () => {
        try {
          await runScenario(s, harness, pool);
        } finally {
          await harness.reset();
        }
      }, 90_000);
    }
  });
}
