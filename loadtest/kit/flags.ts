// The benches' one command line: each bench declares its flags as data; the flags several benches share
// (--quick, --out, --rounds, ...) come from STANDARD, so that they mean the same everywhere. Numbers are
// checked once here (a bad one is an error naming the flag), --quick swaps in each flag's `quick` value
// when the flag was not given, and an unknown flag is an error rather than silently ignored.
import { parseArgs } from "node:util";

type Common = { help: string; /** A flag the bench passes to its own child processes: not in --help. */ internal?: boolean };
export type BooleanFlag = Common & { type: "boolean" };
export type NumberFlag = Common & { type: "number"; default?: number; quick?: number; min?: number; max?: number; integer?: boolean };
export type StringFlag = Common & { type: "string"; default?: string; quick?: string; choices?: readonly string[] };
/** A comma-separated list (`--brokers jetstream,redis`). */
export type ListFlag = Common & { type: "list"; default?: readonly string[]; quick?: readonly string[]; choices?: readonly string[] };
export type FlagDef = BooleanFlag | NumberFlag | StringFlag | ListFlag;
export type FlagSpec = Record<string, FlagDef>;

type ValueOf<D extends FlagDef> = D extends BooleanFlag
  ? boolean
  : D extends NumberFlag
    ? D extends { default: number }
      ? number
      : number | undefined
    : D extends ListFlag
      ? D extends { default: readonly string[] }
        ? string[]
        : string[] | undefined
      : D extends { choices: readonly (infer C)[]; default: string }
        ? C
        : D extends { default: string }
          ? string
          : string | undefined;

/** The parsed values, typed from the spec: a flag with a default is never undefined. */
export type FlagValues<S extends FlagSpec> = { -readonly [K in keyof S]: ValueOf<S[K]> };

/** The flags that mean the same in every bench. A bench takes the ones it honours with `std()`. */
export const STANDARD = {
  quick: { type: "boolean", help: "a short run that checks the bench works (smaller load, fewer rounds); writes no report unless --out is given" },
  out: { type: "string", help: "the report's file (default: the bench's file in loadtest/results/)" },
  "no-write": { type: "boolean", help: "print the results only; write no report" },
  json: { type: "boolean", help: "print the results as one JSON line on stdout" },
  rounds: { type: "number", integer: true, min: 1, max: 100, help: "rounds of the whole measurement; the report shows each and the median" },
  runs: { type: "number", integer: true, min: 1, help: "repetitions of each leg within a round; the best run counts" },
  warmup: { type: "number", integer: true, min: 0, max: 20, help: "rounds run first and discarded" },
  seconds: { type: "number", min: 0.1, help: "how long each measured leg runs (s)" },
  messages: { type: "number", integer: true, min: 1, help: "messages published per leg" },
  size: { type: "number", integer: true, min: 1, help: "message payload size (bytes)" },
  clients: { type: "number", integer: true, min: 1, help: "client connections" },
  rate: { type: "number", min: 0, help: "messages per second" },
  workers: { type: "number", integer: true, min: 1, help: "gateway workers" },
  procs: { type: "number", integer: true, min: 1, help: "client processes" },
  render: { type: "string", help: "write the report and chart again from a saved .json run, without measuring" },
  help: { type: "boolean", help: "this text" },
} as const satisfies FlagSpec;

/** A standard flag, with this bench's default (and --quick value) laid over it. */
export function std<K extends keyof typeof STANDARD, O extends Partial<FlagDef>>(name: K, over?: O): (typeof STANDARD)[K] & O {
  return { ...STANDARD[name], ...over } as (typeof STANDARD)[K] & O;
}

/** A bad command line: the message names the flag; the bench exits 2 with it. */
export class FlagError extends Error {
  readonly code = "bad_flag";
}

function number(name: string, raw: string, d: NumberFlag): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n)) throw new FlagError(`--${name} must be a number, not ${JSON.stringify(raw)}`);
  if (d.integer && !Number.isInteger(n)) throw new FlagError(`--${name} must be a whole number, not ${raw}`);
  if (d.min !== undefined && n < d.min) throw new FlagError(`--${name} must be at least ${d.min}, not ${raw}`);
  if (d.max !== undefined && n > d.max) throw new FlagError(`--${name} must be at most ${d.max}, not ${raw}`);
  return n;
}

function choose(name: string, value: string, choices: readonly string[] | undefined): string {
  if (choices && !choices.includes(value)) throw new FlagError(`--${name} must be one of ${choices.join(", ")}, not ${JSON.stringify(value)}`);
  return value;
}

/** Parses argv against the spec; throws FlagError on an unknown flag, a missing value or a bad number. */
export function parseFlags<S extends FlagSpec>(spec: S, argv: readonly string[]): FlagValues<S> {
  const options = Object.fromEntries(Object.entries(spec).map(([k, d]) => [k, { type: d.type === "boolean" ? "boolean" : "string" }] as const));
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
  } catch (e) {
    throw new FlagError((e as Error).message.split("\n")[0]!, { cause: e });
  }
  const quick = values.quick === true;
  const out: Record<string, unknown> = {};
  for (const [name, d] of Object.entries(spec)) {
    const given = values[name];
    if (d.type === "boolean") {
      out[name] = given === true;
      continue;
    }
    const raw = typeof given === "string" ? given : undefined;
    if (d.type === "number") out[name] = raw !== undefined ? number(name, raw, d) : quick && d.quick !== undefined ? d.quick : d.default;
    else if (d.type === "string") out[name] = raw !== undefined ? choose(name, raw, d.choices) : quick && d.quick !== undefined ? d.quick : d.default;
    else {
      const list = raw !== undefined ? raw.split(",").filter(Boolean) : quick && d.quick ? [...d.quick] : d.default ? [...d.default] : undefined;
      for (const x of list ?? []) choose(name, x, d.choices);
      out[name] = list;
    }
  }
  return out as FlagValues<S>;
}

/** The --help text: one line per flag that is not internal, with its default and --quick value. */
export function usage(name: string, summary: string, spec: FlagSpec): string {
  const rows = Object.entries(spec)
    .filter(([, d]) => !d.internal)
    .map(([k, d]) => {
      const arg = d.type === "boolean" ? "" : d.type === "number" ? " N" : d.type === "list" ? " A,B" : d.choices ? ` ${d.choices.join("|")}` : " S";
      const show = (v: unknown) => (Array.isArray(v) ? v.join(",") : String(v));
      const def = "default" in d && d.default !== undefined ? ` (default ${show(d.default)}` : "";
      const q = "quick" in d && d.quick !== undefined ? `${def ? "; " : " ("}--quick ${show(d.quick)})` : def ? ")" : "";
      return [`  --${k}${arg}`, `${d.help}${def}${q}`] as const;
    });
  const w = Math.max(...rows.map(([a]) => a.length)) + 2;
  return `npm run bench -- ${name} [flags]\n${summary}\n\n${rows.map(([a, b]) => a.padEnd(w) + b).join("\n")}\n`;
}
