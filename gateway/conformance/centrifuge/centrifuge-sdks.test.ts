// The Centrifuge client SDKs of other languages (Go, Python) against the gateway's Centrifugo door
// (/connection/websocket): one scenario set (scenarios.json), a small runner program per SDK (runners/), one
// real gateway and nats-server (the conformance harness, through its TCP proxy). README.md says how it works.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { PACKAGE_ROOT } from "../../src/config/config.js";
import { startHarness, type GatewayHarness } from "../harness.js";
import { ClientPool, runScenario, type Scenario } from "../runner.js";
import { RUNNERS, buildRunners, type BuiltRunners } from "./runners.js";

const scenarios = JSON.parse(readFileSync(join(PACKAGE_ROOT, "gateway/conformance/centrifuge/scenarios.json"), "utf8")) as Scenario[];

let harness: GatewayHarness;
let built: BuiltRunners;
const pools: ClientPool[] = [];

beforeAll(async () => {
  [built, harness] = await Promise.all([
    buildRunners(),
    // A clock tolerance above zero: the SDKs refresh a token `ttl` (whole seconds, rounded down) after connect,
    // at most a second before `exp`, so a gateway that closes at `exp` exactly would race the refresh.
    startHarness({ wsPath: "/connection/websocket", env: { JWT_CLOCK_TOLERANCE: "1s" } }),
  ]);
}, 240_000);
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
  await harness?.close();
  await built?.cleanup();
});

for (const runner of RUNNERS) {
  describe(`centrifuge SDKs — ${runner.label}`, () => {
    let pool: ClientPool;
    beforeAll(() => {
      pool = new ClientPool(built.command(runner));
      pools.push(pool);
    });
    for (const s of scenarios) {
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
