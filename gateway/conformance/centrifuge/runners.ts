// The SDK runners of the Centrifuge scenario set (README.md): which ones there are, how each is built once per
// test run and the command line that starts it.
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { PACKAGE_ROOT } from "../../src/config/config.js";
import type { ClientCommand } from "../clients.js";

const run = promisify(execFile);
const RUNNERS_DIR = join(PACKAGE_ROOT, "gateway/conformance/centrifuge/runners");
/** The project's Python venv (scripts/setup-deploy-tools.sh installs centrifuge-python into it). */
const VENV_PYTHON = join(PACKAGE_ROOT, ".tools/venv/bin/python");

export type Sdk = "go" | "python";
export type Runner = { label: string; sdk: Sdk; format: "json" | "protobuf" };

/** Every SDK and format the scenarios run with, in this order. */
export const RUNNERS: readonly Runner[] = [
  { label: "centrifuge-go 0.12.1, JSON", sdk: "go", format: "json" },
  { label: "centrifuge-python 0.7.0, JSON", sdk: "python", format: "json" },
];

export type BuiltRunners = { command(r: Runner): ClientCommand; cleanup(): Promise<void> };

/** Builds the runners that need it (Go: `go build` from the module cache) into a temporary folder. */
export async function buildRunners(): Promise<BuiltRunners> {
  const dir = await mkdtemp(join(tmpdir(), "fgw-centrifuge-runners-"));
  const goBinary = join(dir, "centrifuge-go-runner");
  await run("go", ["build", "-buildvcs=false", "-o", goBinary, "."], { cwd: join(RUNNERS_DIR, "go") });
  return {
    command(r) {
      const flags = r.format === "protobuf" ? ["--protobuf"] : [];
      if (r.sdk === "go") return { command: goBinary, args: flags };
      return { command: VENV_PYTHON, args: [join(RUNNERS_DIR, "python/runner.py"), ...flags] };
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}
