// ESLint (flat config) for every TypeScript and JavaScript file the repo runs — the gateway, the SDK, the live
// page, the load tools, the benchmarks, the scripts: typescript-eslint's recommended rules, no import cycles,
// imports down the layers, and the few rules our style leans on (the cycle and layer rules are ours:
// scripts/eslint/). Run by `npm test` (npm run lint); Prettier formats the same files (printWidth 160).
import tseslint from "typescript-eslint";
import noCycle from "./scripts/eslint/no-cycle.js";
import layers from "./scripts/eslint/layers.js";

export default tseslint.config(
  { ignores: ["dist/**", "gateway/client/dist/**", "**/node_modules/**", ".tools/**", ".bench/**", "gateway/public/vendor/**", "scratch/**", "data/**"] },
  ...tseslint.configs.recommended,
  {
    rules: { "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_" }] },
  },
  {
    files: ["gateway/src/**/*.ts", "gateway/client/**/*.ts"],
    plugins: { local: { rules: { "no-cycle": noCycle, layers } } },
    rules: {
      // Folders by concern only work if they do not import each other in a circle, nor upwards.
      "local/no-cycle": "error",
      "local/layers": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      // Library code never exits the process: only the CLI and the process roles (primary, worker) do.
      "no-restricted-properties": ["error", { object: "process", property: "exit", message: "throw instead; only cli.ts and cluster/ end the process" }],
      eqeqeq: ["error", "always"],
    },
  },
  {
    // Type-aware rules where they catch real bugs: a switch over a union that misses a member (a new frame
    // op, event type or state) is an error, not a silent fall-through.
    files: ["gateway/src/**/*.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      "@typescript-eslint/switch-exhaustiveness-check": "error",
      // With noUncheckedIndexedAccess an index may be undefined: check it (or use at(), entries(), destructuring).
      "@typescript-eslint/no-non-null-assertion": "error",
      // A promise nobody awaits or catches turns a failure into an unhandled rejection (the process's end);
      // one started on purpose and left to run says so with `void` and handles its own failure.
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
    },
  },
  {
    // The SDK: the same promise rules (an unhandled rejection in a user's app is ours).
    files: ["gateway/client/src/**/*.ts"],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: { "@typescript-eslint/no-floating-promises": "error", "@typescript-eslint/no-misused-promises": "error" },
  },
  {
    files: ["gateway/src/cli.ts", "gateway/src/instance/**/*.ts"],
    rules: { "no-restricted-properties": "off" },
  },
  {
    // The load tools: pub-cluster shares sub-cluster's statistics, clock, CPU meter and payload through one
    // entry, never by reaching into sub-cluster's engines.
    files: ["subtools/src/**/*.ts", "pubtools/src/**/*.ts"],
    rules: { "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }] },
  },
  {
    // The test kit (gateway/testkit/) serves tests and tools; the gateway itself never depends on it.
    files: ["gateway/src/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "^#testkit/|/testkit/", message: "gateway/src never imports the test kit (gateway/testkit/)" }] },
      ],
    },
  },
  {
    files: ["pubtools/src/**/*.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ regex: "subtools/src/(?!shared/mod\\.js$)", message: "import what the tools share from subtools/src/shared/mod.js" }] },
      ],
    },
  },
  {
    // CommonJS where a tool asks for it (Artillery's processor).
    files: ["**/*.cjs"],
    rules: { "@typescript-eslint/no-require-imports": "off" },
  },
  {
    files: ["gateway/test/**/*.ts", "gateway/testkit/**/*.ts", "deploy/test/**/*.ts"],
    rules: {
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
);
