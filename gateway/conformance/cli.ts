// `npm run conformance -- --client <typescript[-msgpack] | kotlin[-msgpack] | "<command>">`: every scenario against a real
// gateway with one client-under-test, one line per scenario and a last line `N passed, N failed`; exit 0
// when none failed, 1 when some did, 2 on bad arguments. README.md beside this file is the contract.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { PACKAGE_ROOT } from "../src/config/config.js";
import { ClientPool, runScenario, type ClientCommand, type Harness, type Scenario } from "./runner.js";

export const USAGE = `usage: npm run conformance -- --client <typescript | typescript-msgpack | kotlin | kotlin-msgpack | "<command line>"> [--scenario <name>]...`;

/** A bad command line: printed with the usage, exit code 2. */
export class UsageError extends Error {}

export type CliArgs = { label: string; client: ClientCommand; scenarios: string[] };

/** The adapters that `--client` knows by name, as command lines relative to the package root. */
export function namedClients(root: string): Record<string, ClientCommand> {
  return {
    typescript: { command: process.execPath, args: [join(root, "gateway/conformance/adapters/typescript.mjs")], cwd: root },
    // The same SDK speaking fanout.v1.msgpack (binary MessagePack frames).
    "typescript-msgpack": { command: process.execPath, args: [join(root, "gateway/conformance/adapters/typescript.mjs"), "--msgpack"], cwd: root },
    kotlin: { command: "bash", args: [join(root, "gateway/client-kotlin/conformance-adapter.sh")], cwd: root },
    // The same SDK speaking fanout.v1.msgpack (Wire.MSGPACK).
    "kotlin-msgpack": { command: "bash", args: [join(root, "gateway/client-kotlin/conformance-adapter.sh"), "--msgpack"], cwd: root },
  };
}

/** Parses the arguments after `--`. */
export function parseArgs(argv: readonly string[], root: string = PACKAGE_ROOT): CliArgs {
  let label: string | undefined;
  const scenarios: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const [name, inline] =
      flag.startsWith("--") && flag.includes("=") ? [flag.slice(0, flag.indexOf("=")), flag.slice(flag.indexOf("=") + 1)] : [flag, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined || v === "") throw new UsageError(`${name} needs a value`);
      return v;
    };
    if (name === "--client") label = value();
    else if (name === "--scenario") scenarios.push(value());
    else throw new UsageError(`unknown argument ${flag}`);
  }
  if (label === undefined) throw new UsageError("--client is required");
  const named = namedClients(root)[label];
  if (named && !existsSync(named.args[0]!)) throw new UsageError(`the ${label} adapter ${named.args[0]} does not exist`);
  if (named) return { label, client: named, scenarios };
  const [command, ...args] = splitCommand(label);
  if (command === undefined) throw new UsageError("--client is an empty command line");
  return { label, client: { command, args, cwd: root }, scenarios };
}

/**
 * Splits a command line as a POSIX shell does, without running one: words apart at unquoted blanks, 'single
 * quotes' taken literally, "double quotes" with \\ escaping only \\ " $ and `, a backslash outside quotes
 * escaping the next character. No variables, globs or operators: they are kept as text.
 */
export function splitCommand(line: string): string[] {
  const words: string[] = [];
  let word: string | undefined;
  let i = 0;
  const add = (s: string) => (word = (word ?? "") + s);
  while (i < line.length) {
    const c = line[i]!;
    if (c === " " || c === "\t" || c === "\n") {
      if (word !== undefined) words.push(word);
      word = undefined;
      i++;
    } else if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new UsageError(`unterminated ' in --client: ${line}`);
      add(line.slice(i + 1, end));
      i = end + 1;
    } else if (c === '"') {
      add("");
      for (i++; ; i++) {
        if (i >= line.length) throw new UsageError(`unterminated " in --client: ${line}`);
        const d = line[i]!;
        if (d === '"') break;
        if (d === "\\" && i + 1 < line.length && '\\"$`'.includes(line[i + 1]!)) add(line[++i]!);
        else add(d);
      }
      i++;
    } else if (c === "\\") {
      if (i + 1 >= line.length) throw new UsageError(`a trailing \\ in --client: ${line}`);
      add(line[i + 1]!);
      i += 2;
    } else {
      add(c);
      i++;
    }
  }
  if (word !== undefined) words.push(word);
  return words;
}

/** Every scenario of `dir`, by name; `only` (names) keeps those, and an unknown name is a usage error. */
export function loadScenarios(dir: string, only: readonly string[] = []): Scenario[] {
  const all = readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort()
    .map((f) => JSON.parse(readFileSync(join(dir, f), "utf8")) as Scenario);
  for (const name of only) if (!all.some((s) => s.name === name)) throw new UsageError(`no scenario ${name} (have: ${all.map((s) => s.name).join(", ")})`);
  return only.length > 0 ? all.filter((s) => only.includes(s.name)) : all;
}

export type CliDeps = {
  root: string;
  /** Starts the gateway the scenarios run against. */
  start(): Promise<Harness & { reset(): Promise<void>; close(): Promise<void> }>;
  print(line: string): void;
};

/** Runs the suite; resolves with the exit code. */
export async function main(argv: readonly string[], deps: CliDeps): Promise<number> {
  let args: CliArgs;
  let scenarios: Scenario[];
  try {
    args = parseArgs(argv, deps.root);
    scenarios = loadScenarios(join(deps.root, "gateway/conformance/scenarios"), args.scenarios);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    deps.print(`${e.message}\n${USAGE}`);
    return 2;
  }
  deps.print(`conformance: ${scenarios.length} scenarios, client ${args.label} (${[args.client.command, ...args.client.args].join(" ")})`);
  const harness = await deps.start();
  const pool = new ClientPool(args.client);
  let passed = 0;
  try {
    for (const s of scenarios) {
      const t0 = Date.now();
      try {
        await runScenario(s, harness, pool);
        passed++;
        deps.print(`ok   ${s.name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
      } catch (e) {
        deps.print(`FAIL ${s.name}: ${(e as Error).message}`);
      } finally {
        await harness.reset();
      }
    }
  } finally {
    await pool.close();
    await harness.close();
  }
  deps.print(`adapter processes started: ${pool.started}`);
  const failed = scenarios.length - passed;
  deps.print(`${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { startHarness } = await import("./harness.js");
  process.exitCode = await main(process.argv.slice(2), { root: PACKAGE_ROOT, start: startHarness, print: (l) => console.log(l) });
}
