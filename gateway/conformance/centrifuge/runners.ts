// The SDK runners of the Centrifuge scenario set (README.md): which ones there are, how each is built once per
// test run and the command line that starts it.
import { execFile } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { PACKAGE_ROOT } from "../../src/config/config.js";
import type { ClientCommand } from "../clients.js";

const run = promisify(execFile);
const RUNNERS_DIR = join(PACKAGE_ROOT, "gateway/conformance/centrifuge/runners");
/** The project's Python venv (scripts/setup-deploy-tools.sh installs centrifuge-python into it). */
const VENV_PYTHON = join(PACKAGE_ROOT, ".tools/venv/bin/python");

export type Sdk = "go" | "python" | "java" | "node";
export type Runner = { label: string; sdk: Sdk; format: "json" | "protobuf" };

/** Every SDK and format the scenarios run with, in this order. */
export const RUNNERS: readonly Runner[] = [
  { label: "centrifuge-go 0.12.1, JSON", sdk: "go", format: "json" },
  { label: "centrifuge-go 0.12.1, Protobuf", sdk: "go", format: "protobuf" },
  { label: "centrifuge-python 0.7.0, JSON", sdk: "python", format: "json" },
  { label: "centrifuge-python 0.7.0, Protobuf", sdk: "python", format: "protobuf" },
  { label: "centrifuge-java 0.4.1, Protobuf", sdk: "java", format: "protobuf" },
];

/**
 * The JavaScript SDK (centrifuge 5.7.4 in Node) as a runner of the same lines: the side-by-side run against
 * Centrifugo uses it; `npm test` drives that SDK directly (gateway/test/centrifuge-sdk*.test.ts).
 */
export const NODE_RUNNERS: readonly Runner[] = [
  { label: "centrifuge-js 5.7.4, JSON", sdk: "node", format: "json" },
  { label: "centrifuge-js 5.7.4, Protobuf", sdk: "node", format: "protobuf" },
];

export type BuiltRunners = { command(r: Runner): ClientCommand; cleanup(): Promise<void> };

/**
 * Whether the Java runner's build in `dir`/target is newer than its pom.xml and every source file: then the test uses
 * it as it is (scripts/setup-centrifuge-sdks.sh builds it during `npm test`'s set-up, beside the TypeScript build).
 */
function javaBuilt(dir: string): boolean {
  const built = [join(dir, "target/classpath.txt"), join(dir, "target/classes/runner/Runner.class")];
  if (!built.every((f) => existsSync(f))) return false;
  const oldest = Math.min(...built.map((f) => statSync(f).mtimeMs));
  const sources = [
    join(dir, "pom.xml"),
    ...readdirSync(join(dir, "src"), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath, e.name)),
  ];
  return sources.every((f) => statSync(f).mtimeMs <= oldest);
}

/**
 * Builds the runners of `runners` that need it, once: Go with `go build` from the module cache into a temporary
 * folder, Java with one offline `mvn package` (runners/java/target, its classpath in target/classpath.txt) unless
 * that build is newer than its sources. scripts/setup-centrifuge-sdks.sh fetches what both need.
 */
export async function buildRunners(runners: readonly Runner[] = RUNNERS): Promise<BuiltRunners> {
  const dir = await mkdtemp(join(tmpdir(), "fgw-centrifuge-runners-"));
  const goBinary = join(dir, "centrifuge-go-runner");
  const javaDir = join(RUNNERS_DIR, "java");
  const needs = (sdk: Sdk) => runners.some((r) => r.sdk === sdk);
  const [, javaClasspath] = await Promise.all([
    needs("go") ? run("go", ["build", "-buildvcs=false", "-o", goBinary, "."], { cwd: join(RUNNERS_DIR, "go") }) : undefined,
    needs("java")
      ? (javaBuilt(javaDir) ? Promise.resolve() : run("mvn", ["-q", "-B", "-o", "package"], { cwd: javaDir })).then(async () => {
          const deps = (await readFile(join(javaDir, "target/classpath.txt"), "utf8")).trim();
          return `${join(javaDir, "target/classes")}:${deps}`;
        })
      : undefined,
  ]);
  return {
    command(r) {
      const flags = r.format === "protobuf" ? ["--protobuf"] : [];
      if (r.sdk === "go") return { command: goBinary, args: flags };
      if (r.sdk === "node") return { command: process.execPath, args: [join(RUNNERS_DIR, "node/runner.mjs"), ...flags] };
      if (r.sdk === "java") return { command: "java", args: ["-cp", javaClasspath!, "runner.Runner"] };
      return { command: VENV_PYTHON, args: [join(RUNNERS_DIR, "python/runner.py"), ...flags] };
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
