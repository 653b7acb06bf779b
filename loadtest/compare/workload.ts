// The users' reference workload (their Redis pub/sub notes) and the options that scale it.
import { FlagError, std, type FlagValues } from "../kit/flags.js";
import { defineBench } from "../kit/main.js";

export type Broker = "jetstream" | "redis";
export const BROKERS: readonly Broker[] = ["jetstream", "redis"];

/** One workload row: `clients` subscribers on one channel, one publisher at `rate` msg/s. */
export type Row = { clients: number; rate: number };
export const ROWS: readonly Row[] = [
  { clients: 800, rate: 1 },
  { clients: 800, rate: 10 },
  { clients: 800, rate: 100 },
  { clients: 8_000, rate: 10 },
  { clients: 8_000, rate: 50 },
  { clients: 8_000, rate: 100 },
];

export const rowKey = (r: Row): string => `${r.clients}x${r.rate}`;

/**
 * The users' own figures for Redis pub/sub fan-out on their cluster (separate hosts for Redis, subscribers
 * and publisher), from their benchmark notes; ms. `current` marks figures they copied from a live
 * "(current)" window rather than the final report. They published no percentiles.
 */
export type Reference = { received?: number; min: number; max: number; mean: number; hmean: number; current?: boolean };
export const REFERENCE: Readonly<Record<string, Reference>> = {
  "800x1": { received: 10_400, min: 0.397, max: 6.327, mean: 2.33579711538461, hmean: 1.9182195670806292 },
  "800x10": { received: 228_000, min: 0.33, max: 18.242, mean: 6.668003192982599, hmean: 4.313213412372611 },
  "800x100": { received: 3_360_000, min: 0.293, max: 97.38, mean: 34.677810819344884, hmean: 18.375906239827007 },
  "8000x10": { received: 800_000, min: 26.152, max: 386.233, mean: 167.23781696124573, hmean: 124.16555377288029 },
  "8000x50": { min: 0.323, max: 376.611, mean: 149.23278340674054, hmean: 56.17647388365534, current: true },
};

export type CompareOptions = {
  scale: number;
  /** Seconds of publishing per row and broker. */
  publishS: number;
  rows: Row[];
  brokers: Broker[];
  workers: number;
  /** Where compare.md/.json/.png go; undefined when the run writes none (--no-write, or --quick without --out). */
  outDir: string | undefined;
  /** Seconds a row may take after publishing ends before its subscribers are stopped. */
  drainS: number;
  /** Re-render compare.md/.png from this compare.json instead of measuring. */
  render?: string;
};

/** compare's command line (npm run bench -- compare): the kit checks it; compareOptions turns it into the run's options. */
export const BENCH = defineBench("compare", {
  quick: std("quick", { help: "clients × 0.1 (--scale 0.1), 5 s of publishing per row; writes no report unless --out is given" }),
  scale: { type: "number", min: 0.001, max: 1, default: 1, quick: 0.1, help: "clients per row × this; publishing and drain time follow it" },
  seconds: std("seconds", { min: 1, max: 3_600, help: "seconds of publishing per row and broker (default 30 × scale, at least 5)" }),
  duration: { type: "number", min: 1, max: 3_600, help: "the old name of --seconds" },
  rows: { type: "string", help: `rows to run: keys (800x10) or client counts (800 = its rows); rows are ${ROWS.map(rowKey).join(", ")} (default all)` },
  brokers: { type: "list", choices: BROKERS, default: BROKERS, help: "the gateway's brokers to measure" },
  workers: std("workers", { max: 64, default: 2 }),
  drain: { type: "number", min: 5, max: 600, help: "seconds a row may take after publishing before its subscribers stop (default 60 × scale, at least 15)" },
  out: std("out", { help: "the directory compare.md, compare.json and compare.png go to (default loadtest/results)" }),
  "no-write": std("no-write"),
  render: std("render", { help: "write compare.md/.png again from a saved compare.json, without measuring" }),
});

export type CompareFlags = FlagValues<typeof BENCH.flags>;

/** Rows selected by `--rows`: full keys (`800x10`) or client counts (`800` = all 800-client rows); scaled. */
function selectRows(spec: string | undefined, scale: number): Row[] {
  const wanted = spec
    ? spec
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;
  const picked = ROWS.filter((r) => !wanted || wanted.includes(rowKey(r)) || wanted.includes(String(r.clients)));
  if (picked.length === 0) throw new FlagError(`--rows ${JSON.stringify(spec)} selects nothing; rows are ${ROWS.map(rowKey).join(", ")}`);
  return picked.map((r) => ({ clients: Math.max(1, Math.round(r.clients * scale)), rate: r.rate }));
}

/** The run's options: publishing and drain time follow the scale unless given (--duration is --seconds' old name). */
export function compareOptions(flags: CompareFlags, outDir: string | undefined): CompareOptions {
  const { scale } = flags;
  return {
    scale,
    publishS: flags.seconds ?? flags.duration ?? Math.max(5, Math.round(30 * scale)),
    rows: selectRows(flags.rows, scale),
    brokers: flags.brokers as Broker[],
    workers: flags.workers,
    drainS: flags.drain ?? Math.max(15, Math.round(60 * scale)),
    outDir,
    render: flags.render,
  };
}

/** Subscriber processes for a row: the users' 8 processes, fewer for small scaled rows (≤ 20,000 fds each). */
export function subProcesses(clients: number): number {
  return Math.max(1, Math.min(8, Math.ceil(clients / 100), clients));
}
