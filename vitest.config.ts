import { defineConfig } from "vitest/config";

/** In-process tests of pure logic (state machines, parsers, statistics): seconds, no servers, no build. */
const UNIT = [
  "gateway/test/unit/**/*.test.ts",
  "gateway/client/test/**/*.test.ts",
  "gateway/conformance/test/**/*.test.ts",
  "gateway/test/fuzz/frames.fuzz.test.ts",
  "gateway/test/fuzz/deltas.fuzz.test.ts",
  "subtools/test/unit/**/*.test.ts",
  "pubtools/test/unit/**/*.test.ts",
  "loadtest/test/unit/**/*.test.ts",
];
const ALL = [
  "gateway/test/**/*.test.ts",
  "gateway/client/test/**/*.test.ts",
  "gateway/conformance/**/*.test.ts",
  "gateway/client-kotlin/test/**/*.test.ts",
  "subtools/test/**/*.test.ts",
  "pubtools/test/**/*.test.ts",
  "loadtest/test/**/*.test.ts",
  "deploy/test/**/*.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 90_000,
    // Each test file starts its own servers on ephemeral ports; two cores, so keep parallelism modest.
    pool: "forks",
    maxWorkers: 2,
    fileParallelism: true,
    reporters: ["default"],
    projects: [
      { extends: true, test: { name: "unit", include: UNIT } },
      {
        extends: true,
        // Real servers (nats-server, redis-server, the gateway's CLI from dist/, Chromium): `npm run build` first.
        test: { name: "integration", include: ALL, exclude: UNIT, globalSetup: ["gateway/test/support/require-build.ts"] },
      },
    ],
  },
});
