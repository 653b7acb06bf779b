// The scenario set (scenarios.json) as vitest tests: one real gateway (the conformance harness on the Centrifugo
// door) for a test file, every scenario with every runner it names. A test file per tier calls this once.
import { afterAll, beforeAll, describe, it } from "vitest";
import { startHarness, type GatewayHarness } from "../harness.js";
import { ClientPool, runScenario } from "../runner.js";
import { buildRunners, type BuiltRunners, type Runner } from "./runners.js";
import { SCENARIOS } from "./scenarios.js";

export function describeCentrifugeSdks(runners: readonly Runner[]): void {
  let harness: GatewayHarness;
  let built: BuiltRunners;
  const pools: ClientPool[] = [];

  beforeAll(async () => {
    [built, harness] = await Promise.all([
      buildRunners(runners),
      // A clock tolerance above zero: the SDKs refresh a token `ttl` (whole seconds, rounded down) after connect,
      // at most a second before `exp`, so a gateway that closes at `exp` exactly would race the refresh.
      startHarness({ wsPath: "/connection/websocket", env: { JWT_CLOCK_TOLERANCE: "1s" } }),
    ]);
  }, 300_000);
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close()));
    await harness?.close();
    await built?.cleanup();
  });

  for (const runner of runners) {
    describe(`centrifuge SDKs — ${runner.label}`, () => {
      let pool: ClientPool;
      beforeAll(() => {
        pool = new ClientPool(built.command(runner));
        pools.push(pool);
      });
      for (const s of SCENARIOS) {
        it(`centrifuge SDKs — ${runner.label} — ${s.name}: ${s.description}`, async () => {
          try {
            await runScenario(s, harness, pool);
          } finally {
            await harness.reset();
          }
        }, 90_000);
      }
    });
  }
}
