// A bench's entry point: its name, one line of what it measures, and its flags, declared as data; the kit
// parses the command line (--help prints the flags, a bad flag exits 2 with its message) and turns the
// run's outcome into the exit code (0, or the code the run returns; 1, or the bench's own code, when it throws).
import { BENCHES, type BenchName } from "./registry.js";
import { FlagError, parseFlags, STANDARD, usage, type FlagSpec, type FlagValues } from "./flags.js";

export type Bench<S extends FlagSpec> = { readonly name: string; readonly summary: string; readonly flags: S };

/** Declares a bench: its summary comes from the registry; `flags` keeps its literal types for the parsed values. */
export const defineBench = <const S extends FlagSpec>(name: BenchName, flags: S): Bench<S> => ({ name, summary: BENCHES[name].summary, flags });

/** The parsed flags plus the raw argv (for the report's command line). */
export type Run<S extends FlagSpec> = { flags: FlagValues<S>; argv: readonly string[] };

/** Parses a bench's argv: `help` when --help was asked for, the values otherwise; throws FlagError. */
export function parseBench<S extends FlagSpec>(bench: Bench<S>, argv: readonly string[]): { help: string } | Run<S> {
  if (argv.includes("--help") || argv.includes("-h")) return { help: usage(bench.name, bench.summary, { ...bench.flags, help: STANDARD.help }) };
  return { flags: parseFlags(bench.flags, argv), argv };
}

/** What a bench's child role (a client process it forked) returns: the process lives on until it is told to end. */
export const KEEP_RUNNING = Symbol("keep running");

/**
 * Runs a bench from process.argv: exits with the run's code (0 when it returns nothing) unless it returns KEEP_RUNNING.
 * `failed` is the exit code of a run that throws (1; the soak and chaos runs keep 1 for a failed verdict and use 2).
 */
export function runBench<S extends FlagSpec>(
  bench: Bench<S>,
  run: (r: Run<S>) => Promise<number | void | typeof KEEP_RUNNING>,
  { failed = 1 }: { failed?: number } = {},
): void {
  const badFlag = (e: FlagError): never => {
    process.stderr.write(`${bench.name}: ${e.message} (--help lists the flags)\n`);
    process.exit(2);
  };
  let parsed: ReturnType<typeof parseBench<S>>;
  try {
    parsed = parseBench(bench, process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof FlagError)) throw e;
    return badFlag(e);
  }
  if ("help" in parsed) {
    process.stdout.write(parsed.help);
    process.exit(0);
  }
  run(parsed).then(
    (code) => {
      if (code !== KEEP_RUNNING) process.exit(code ?? 0);
    },
    (e: unknown) => {
      if (e instanceof FlagError) badFlag(e);
      process.stderr.write(`${bench.name} failed: ${String((e as Error)?.stack ?? e)}\n`);
      process.exit(failed);
    },
  );
}
