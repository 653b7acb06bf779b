// bench:jetstream's command line, parsed once into a frozen object, and the message counts each mode uses.
import { existsSync, statSync } from "node:fs";
import { basename, dirname, resolve } from "node:path";
import { FlagError, parseFlags, std } from "../../kit/flags.js";
import { defineBench } from "../../kit/main.js";
import { RESULTS_DIR } from "../../kit/results.js";
import { TARGETS, type Target } from "./servers.js";

export type Group = "000" | "000-gateway" | "001" | "002" | "003" | "paths" | "enc";
export const GROUPS: readonly Group[] = ["000", "000-gateway", "001", "002", "003", "paths", "enc"];

/**
 * Message counts. The users' pods, publishers and subscribers per pod are kept (they are what the matrix
 * compares); their message counts are divided so one full run takes minutes on two shared cores.
 */
export type Counts = Readonly<{
  /** Seed 000 pods are the users' divided by this (3 and 6 pods at 1; 1 and 2 at 3). */
  podDivisor: number;
  /** Messages per pod where the users sent 10,000 (10 KB and 1 KB rows). */
  matrix10k: number;
  /** Messages per pod where the users sent 1,000,000 (512 B rows). */
  matrix1m: number;
  /** Seed 001: messages per run (users: 10,000). */
  pushGroup: number;
  /** Seed 002: messages per dedup run and per consumer-scaling step (users: 100,000). */
  dedup: number;
  scaling: number;
  /** Seed 002: KV puts (users: 100,000). */
  kv: number;
  /** Seed 003: publishes per sequential and per pipelined run. */
  latencySequential: number;
  latencyPipelined: number;
  /** Publish paths (nats bench, nats.js, gateway HTTP): messages per sequential and per pipelined run. */
  pathsSequential: number;
  pathsPipelined: number;
  /** Encryption at rest (enc): sync and async publishes, and messages replayed, per cipher. */
  encSync: number;
  encAsync: number;
  encReplay: number;
}>;

export const FULL: Counts = Object.freeze({
  podDivisor: 1,
  matrix10k: 2_000,
  matrix1m: 20_000,
  pushGroup: 10_000,
  dedup: 100_000,
  scaling: 50_000,
  kv: 20_000,
  latencySequential: 500,
  latencyPipelined: 10_000,
  pathsSequential: 2_000,
  pathsPipelined: 20_000,
  encSync: 2_000,
  encAsync: 20_000,
  encReplay: 20_000,
});

export const QUICK: Counts = Object.freeze({
  podDivisor: 3,
  matrix10k: 60,
  matrix1m: 200,
  pushGroup: 100,
  dedup: 1_000,
  scaling: 500,
  kv: 100,
  latencySequential: 10,
  latencyPipelined: 200,
  pathsSequential: 50,
  pathsPipelined: 300,
  encSync: 300,
  encAsync: 3_000,
  encReplay: 5_000,
});

export type Options = Readonly<{
  quick: boolean;
  targets: readonly Target[];
  groups: ReadonlySet<Group>;
  counts: Counts;
  /** Where jetstream.{md,json,png} go; null writes nothing (the quick run's default). */
  outDir: string | null;
  /** Base name of the result files (default jetstream): a partial run kept beside the full one gets its own. */
  name: string;
  chart: boolean;
  /** How many times the whole evaluation runs; tables show each row's median, ratios the median of per-round ratios. */
  rounds: number;
  /** Re-render jetstream.md (and .png) from this run's JSON instead of measuring. */
  render: string | null;
}>;

/** The command line, declared for the kit (loadtest/kit): --help prints it, bad values are refused there. */
export const BENCH = defineBench("jetstream", {
  target: {
    type: "string",
    default: "both",
    choices: ["single", "cluster", "both"],
    help: "where seeds 000-002 and the publish paths run; seed 003 runs on its own server",
  },
  only: {
    type: "list",
    default: GROUPS,
    choices: GROUPS,
    help: 'a subset by seed (000 matrix, 001 push consumer, 002 cluster/KV, 003 latency), "000-gateway" (seed 000\'s layouts through the gateway), "paths" or "enc" (encryption at rest)',
  },
  rounds: std("rounds", { default: 3, quick: 1, max: 20, help: "repetitions of the whole evaluation; the report keeps medians" }),
  out: std("out", {
    help: "the report's file, NAME.json and NAME.png beside it, or a directory for them (default loadtest/results/jetstream.md for a full run)",
  }),
  name: { type: "string", help: "base name of the result files instead of jetstream (NAME.md, NAME.json, NAME.png)" },
  "no-chart": { type: "boolean", help: "write no chart" },
  render: std("render", { help: "write jetstream.md and jetstream.png again from a run's jetstream.json (next to it, or beside --out)" }),
  quick: std("quick", { help: "a few-minute run (smaller counts, fewer Node rows); writes no files unless --out is given" }),
});

export function parseOptions(argv: readonly string[]): Options {
  const values = parseFlags(BENCH.flags, argv);
  const quick = values.quick;
  const t = values.target;
  const render = values.render !== undefined ? resolve(values.render) : null;
  // --out names the report (x.md) or, as before the kit, a directory for it.
  const out = values.out !== undefined ? resolve(values.out) : undefined;
  const outIsFile = out !== undefined && /\.md$/.test(out) && !(existsSync(out) && statSync(out).isDirectory());
  const name = values.name ?? (outIsFile ? basename(out, ".md") : render ? basename(render, ".json") : "jetstream");
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new FlagError(`--name must be a file name of letters, digits, ., _ or -, not ${name}`);
  const outDir = out !== undefined ? (outIsFile ? dirname(out) : out) : quick || render ? null : RESULTS_DIR;
  return Object.freeze({
    quick,
    targets: Object.freeze(t === "both" ? [...TARGETS] : [t as Target]),
    groups: new Set(values.only as Group[]),
    counts: quick ? QUICK : FULL,
    outDir,
    name,
    chart: !values["no-chart"] && !quick && (outDir !== null || render !== null),
    render,
    rounds: values.rounds,
  });
}
