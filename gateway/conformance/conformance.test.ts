import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { PACKAGE_ROOT } from "../src/config/config.js";
import { loadScenarios, parseArgs } from "./cli.js";
import { startHarness, type GatewayHarness } from "./harness.js";
import { runScenario } from "./runner.js";

// Every scenario of scenarios/ against a real gateway and a client-under-test: the TypeScript SDK
// (adapters/typescript.mjs), or CONFORMANCE_CLIENT, as `npm run conformance -- --client` takes it.
const { label, client } = parseArgs(["--client", process.env.CONFORMANCE_CLIENT ?? "typescript"]);
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
