import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "gateway/test/**/*.test.ts",
      "gateway/client/{test,conformance}/**/*.test.ts",
      "subtools/test/**/*.test.ts",
      "pubtools/test/**/*.test.ts",
      "loadtest/test/**/*.test.ts",
      "deploy/test/**/*.test.ts",
    ],
    testTimeout: 60_000,
    hookTimeout: 90_000,
    // Each test file starts its own servers on ephemeral ports; two cores, so keep parallelism modest.
    pool: "forks",
    maxWorkers: 2,
    fileParallelism: true,
    reporters: ["default"],
  },
});
