// The Centrifuge SDK scenario set (scenarios.json), read once: the vitest suite (suite.ts) and the side-by-side
// run against Centrifugo (loadtest/compare/centrifugo.ts) play the same list.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { PACKAGE_ROOT } from "../../src/config/config.js";
import type { Scenario } from "../runner.js";

export const SCENARIOS = JSON.parse(readFileSync(join(PACKAGE_ROOT, "gateway/conformance/centrifuge/scenarios.json"), "utf8")) as Scenario[];
