// bench:jetstream's command line, parsed once into a frozen object, and the message counts each mode uses.
import { parseArgs } from "node:util";
import { basename, resolve } from "node:path";
import { ROOT } from "../common.js";
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

export const USAGE = `usage: bench:jetstream [--quick] [--target single|cluster|both] [--only 000,000-gateway,001,002,003,paths,enc] [--out DIR] [--name NAME] [--no-chart] [--rounds N]
       bench:jetstream --render FILE.json [--out DIR] [--no-chart]
  --quick    a few-minute run (smaller counts, fewer Node rows); writes no files unless --out is given
  --target   where to run seeds 000-002 and the publish paths (default both); seed 003 runs on its own server
  --only     a subset of the evaluation, by seed (000 matrix, 001 push consumer, 002 cluster/KV, 003 latency), "000-gateway" (seed 000's
             one-stream vs stream-per-app rows through the gateway, namespaces for the latter), "paths" or "enc" (encryption at rest)
  --out      directory for jetstream.md, jetstream.json and jetstream.png (default loadtest/results for a full run)
  --name     base name of the result files instead of jetstream (NAME.md, NAME.json, NAME.png)
  --rounds   repetitions of the whole evaluation (default 3 for a full run, 1 with --quick); the report keeps medians
  --render   write jetstream.md and jetstream.png again from a run's jetstream.json (next to it, or in --out)`;

export class UsageError extends Error {
  override readonly name = "UsageError";
}

function roundsOf(v: string | undefined, quick: boolean): number {
  if (v === undefined) return quick ? 1 : 3;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 20) throw new UsageError(`--rounds must be an integer from 1 to 20, not ${v}`);
  return n;
}

export function parseOptions(argv: readonly string[]): Options {
  const { values, positionals } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: true,
    options: {
      quick: { type: "boolean" },
      target: { type: "string" },
      only: { type: "string" },
      out: { type: "string" },
      name: { type: "string" },
      "no-chart": { type: "boolean" },
      render: { type: "string" },
      rounds: { type: "string" },
    },
  });
  if (positionals.length) throw new UsageError(`unexpected argument "${positionals[0]}"`);
  const t = values.target ?? "both";
  if (t !== "both" && !TARGETS.includes(t as Target)) throw new UsageError(`--target must be single, cluster or both, not ${t}`);
  const only = (values.only ?? GROUPS.join(",")).split(",").map((s) => s.trim());
  const bad = only.find((g) => !GROUPS.includes(g as Group));
  if (bad !== undefined) throw new UsageError(`--only takes ${GROUPS.join(", ")}, not ${bad}`);
  const quick = values.quick ?? false;
  const render = values.render !== undefined ? resolve(values.render) : null;
  const name = values.name ?? (render ? basename(render, ".json") : "jetstream");
  if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new UsageError(`--name must be a file name of letters, digits, ., _ or -, not ${name}`);
  const outDir = values.out !== undefined ? resolve(values.out) : quick || render ? null : resolve(ROOT, "loadtest/results");
  return Object.freeze({
    quick,
    targets: Object.freeze(t === "both" ? [...TARGETS] : [t as Target]),
    groups: new Set(only as Group[]),
    counts: quick ? QUICK : FULL,
    outDir,
    name,
    chart: !(values["no-chart"] ?? false) && !quick && (outDir !== null || render !== null),
    render,
    rounds: roundsOf(values.rounds, quick),
  });
}
