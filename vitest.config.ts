import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { BaseSequencer, type TestSpecification } from "vitest/node";

/**
 * The test kit by name (`#testkit/<module>.js`, gateway/testkit/README.md) runs from its sources here; tsc finds
 * them through tsconfig.json's "paths", and compiled tools (node, dist/) through package.json's "imports".
 */
const TESTKIT = { find: /^#testkit\/(.+)\.js$/, replacement: fileURLToPath(new URL("./gateway/testkit/$1.ts", import.meta.url)) };

/** In-process tests of pure logic (state machines, parsers, statistics): seconds, no servers, no build. */
const UNIT = [
  "gateway/test/unit/**/*.test.ts",
  "gateway/client/test/**/*.test.ts",
  "gateway/conformance/test/**/*.test.ts",
  "gateway/test/fuzz/frames.fuzz.test.ts",
  "gateway/test/fuzz/deltas.fuzz.test.ts",
  "gateway/test/fuzz/centrifuge.fuzz.test.ts",
  "gateway/test/fuzz/centrifuge-protobuf.fuzz.test.ts",
  "subtools/test/unit/**/*.test.ts",
  "pubtools/test/unit/**/*.test.ts",
  "loadtest/test/unit/**/*.test.ts",
];
/**
 * The long tier (`npm run test:long`): the load tools tested end to end and at length, and the multi-server
 * set-ups. Every integration test of loadtest/, subtools/ and pubtools/ (soak: three minutes; chaos: a minute of
 * faults on a 3-node cluster; the benches' smoke runs; the gateway at scale (gateway/test/scale: 100,000 messages
 * caught up, 10,000 channels counted); the regions on a 3-region supercluster (gateway/test/regions); the subscriber and publisher tools against real
 * gateways, Redis and core NATS), every test on a 3-node NATS cluster, and the Centrifuge SDKs over Protobuf
 * (gateway/conformance/centrifuge: Go, Python and Java, whose Maven build alone takes 15–30 s). `.ci/run` runs it after `npm test`,
 * so nothing is tested less; `npm test` stays the loop a developer of the gateway waits on.
 */
const LONG = [
  "loadtest/test/*.test.ts",
  "subtools/test/*.test.ts",
  "pubtools/test/*.test.ts",
  "gateway/test/nats-cluster/**/*.test.ts",
  "gateway/test/regions/**/*.test.ts",
  "gateway/test/scale/**/*.test.ts",
  "deploy/test/nats-cluster.test.ts",
  "deploy/test/nats-cluster-script.test.ts",
  "gateway/conformance/centrifuge/centrifuge-sdks-protobuf.test.ts",
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

/**
 * The slowest integration files (30–40 s each, measured on fresh clones), started first: with a few workers, a long
 * file that starts last keeps one worker busy while the others have nothing left. Vitest orders by the last run's
 * durations when it has them; a fresh clone has none, and then it keeps the glob's order.
 */
const SLOW_FIRST = [
  "gateway/test/client-runtimes.test.ts",
  "gateway/test/events-occupancy.test.ts",
  "gateway/test/browser.test.ts",
  "gateway/test/centrifuge-sdk.test.ts",
  "gateway/client-kotlin/test/conformance.test.ts",
  "gateway/client-kotlin/test/conformance-msgpack.test.ts",
  "gateway/test/replay.test.ts",
  "gateway/test/presence.test.ts",
  "gateway/conformance/conformance.test.ts",
  "gateway/conformance/centrifuge/centrifuge-sdks.test.ts",
  "gateway/conformance/conformance-msgpack.test.ts",
  "gateway/test/store-encryption.test.ts",
  "gateway/test/sse.test.ts",
  "gateway/test/events-graceful-stop.test.ts",
  "gateway/test/lifecycle.test.ts",
  "gateway/test/events-webhook-outage.test.ts",
  "gateway/test/secure-nats.test.ts",
  "gateway/test/read-bounds.test.ts",
  "gateway/test/live-repair.test.ts",
];

class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (f: TestSpecification): number => {
      const i = SLOW_FIRST.findIndex((p) => f.moduleId.endsWith(p));
      return i === -1 ? SLOW_FIRST.length : i;
    };
    // Stable: within a rank (the rest) the base order stays.
    return sorted
      .map((f, i) => ({ f, i, r: rank(f) }))
      .sort((a, b) => a.r - b.r || a.i - b.i)
      .map((x) => x.f);
  }
}

export default defineConfig({
  resolve: { alias: [TESTKIT] },
  test: {
    testTimeout: 60_000,
    hookTimeout: 90_000,
    // Each test file starts its own servers on ephemeral ports. Three files at a time on two cores: an integration
    // file spends much of its time waiting on its servers and sockets (with two workers both tiers kept about 1.2
    // of the 2 cores busy, measured on fresh clones), so a third keeps the cores fed.
    pool: "forks",
    maxWorkers: 3,
    fileParallelism: true,
    sequence: { sequencer: SlowFirst },
    reporters: ["default"],
    projects: [
      { extends: true, test: { name: "unit", include: UNIT } },
      {
        extends: true,
        // Real servers (nats-server, redis-server, the gateway's CLI from dist/, Chromium): `npm run build` first.
        test: {
          name: "integration",
          include: ALL,
          exclude: [...UNIT, ...LONG],
          globalSetup: ["gateway/testkit/require-build.ts"],
        },
      },
      {
        extends: true,
        test: { name: "long", include: LONG, globalSetup: ["gateway/testkit/require-build.ts"] },
      },
    ],
  },
});
