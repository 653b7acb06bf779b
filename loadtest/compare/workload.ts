// The users' reference workload (their Redis pub/sub notes) and the options that scale it.
import { parseArgs } from "node:util";

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
  outDir: string;
  /** Seconds a row may take after publishing ends before its subscribers are stopped. */
  drainS: number;
  /** Re-render compare.md/.png from this compare.json instead of measuring. */
  render?: string;
};

const USAGE = `usage: compare [--quick | --scale S] [--duration SECONDS] [--rows 800x1,8000x10|800|8000] [--brokers jetstream,redis]
               [--workers N] [--drain SECONDS] [--out DIR] [--render compare.json]`;

export class UsageError extends Error {}

/** Rows selected by `--rows`: full keys (`800x10`) or client counts (`800` = all 800-client rows); scaled. */
function selectRows(spec: string | undefined, scale: number): Row[] {
  const wanted = spec
    ? spec
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean)
    : undefined;
  const picked = ROWS.filter((r) => !wanted || wanted.includes(rowKey(r)) || wanted.includes(String(r.clients)));
  if (picked.length === 0) throw new UsageError(`--rows "${spec}" selects nothing; rows are ${ROWS.map(rowKey).join(", ")}`);
  return picked.map((r) => ({ clients: Math.max(1, Math.round(r.clients * scale)), rate: r.rate }));
}

export function parseCompareOptions(argv: string[], defaultOut: string): CompareOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: "boolean", default: false },
      scale: { type: "string" },
      duration: { type: "string" },
      rows: { type: "string" },
      brokers: { type: "string" },
      workers: { type: "string" },
      drain: { type: "string" },
      out: { type: "string" },
      render: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help) throw new UsageError(USAGE);
  const num = (name: string, v: string | undefined, dflt: number, min: number, max: number): number => {
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || n < min || n > max) throw new UsageError(`--${name} must be between ${min} and ${max}, got "${v}"\n${USAGE}`);
    return n;
  };
  const scale = num("scale", values.scale, values.quick ? 0.1 : 1, 0.001, 1);
  const brokers = (values.brokers ?? BROKERS.join(",")).split(",").map((s) => s.trim()) as Broker[];
  for (const b of brokers) if (!BROKERS.includes(b)) throw new UsageError(`--brokers: unknown broker "${b}"\n${USAGE}`);
  return {
    scale,
    publishS: num("duration", values.duration, Math.max(5, Math.round(30 * scale)), 1, 3_600),
    rows: selectRows(values.rows, scale),
    brokers,
    workers: num("workers", values.workers, 2, 1, 64),
    drainS: num("drain", values.drain, Math.max(15, Math.round(60 * scale)), 5, 600),
    outDir: values.out ?? defaultOut,
    render: values.render,
  };
}

/** Subscriber processes for a row: the users' 8 processes, fewer for small scaled rows (≤ 20,000 fds each). */
export function subProcesses(clients: number): number {
  return Math.max(1, Math.min(8, Math.ceil(clients / 100), clients));
}
