import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, it } from "vitest";
import { startHarness, type GatewayHarness } from "./harness.js";
import { ClientProcess, runScenario, type Scenario } from "./runner.js";

// Every scenario of scenarios/ against a real gateway and a client-under-test: the TypeScript SDK
// (adapters/typescript.mjs), or the command in CONFORMANCE_CLIENT (split on spaces), another SDK's adapter.
const dir = new URL("./scenarios/", import.meta.url);
const scenarios = readdirSync(dir)
  .filter((f) => f.endsWith(".json"))
  .sort()
  .map((f) => JSON.parse(readFileSync(new URL(f, dir), "utf8")) as Scenario);
const [command, ...args] = process.env.CONFORMANCE_CLIENT?.split(" ") ?? [
  process.execPath,
  fileURLToPath(new URL("./adapters/typescript.mjs", import.meta.url)),
];

let harness: GatewayHarness;
beforeAll(async () => {
  harness = await startHarness();
});
afterAll(async () => {
  await harness?.close();
});

describe(`conformance — ${process.env.CONFORMANCE_CLIENT ?? "the TypeScript SDK"}`, () => {
  for (const s of scenarios) {
    it(`conformance — ${s.name}: ${s.description}`, async () => {
      const client = new ClientProcess(command!, args);
      try {
        await runScenario(s, harness, client);
      } finally {
        await client.stop();
        await harness.fault("accept", { fault: "accept" });
      }
    }, 90_000);
  }
});
