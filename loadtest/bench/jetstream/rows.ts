// What one measured row of the evaluation holds, and the small helpers that build rates from the tools' output.
import type { Target } from "./servers.js";
import type { BenchClient, BenchOutput } from "./natscli.js";
import type { NodeLatency, NodeRates } from "./node-client.js";

/** Which client did the work: the Go tool the users ran, the Node client the gateway uses, or the gateway. */
export type Path = "nats bench" | "nats CLI" | "nats.js" | "gateway HTTP" | "gateway WS";

export type Seed = "000" | "001" | "002" | "003" | "paths" | "enc";

/** Messages per second over a run's clients: the per-client figures (min/avg/max, as nats bench prints) and all together. */
export type Rates = { clients: number; min: number; avg: number; max: number; aggregate: number };

/** Latencies in milliseconds; perMessage is the run's wall time divided by its messages. */
export type Latency = { avg: number; min: number; max: number; p50: number; p99: number; perMessage?: number };

export type RowStatus = "ok" | "skipped" | "failed";

export type Row = {
  /** The workload (its users' reference is REFERENCE[workload]); the same workload runs on several targets and paths. */
  workload: string;
  seed: Seed;
  target: Target;
  path: Path;
  /** The configuration as run here. */
  config: string;
  /** The commands run (nats CLI, pub-cluster), for anyone repeating a row by hand. */
  commands: string[];
  pub?: Rates;
  sub?: Rates;
  latency?: Latency;
  /** The row's headline figure and what it is. */
  value?: number;
  metric: string;
  /** Which repetition of the whole evaluation this row comes from (1-based; --rounds). */
  round: number;
  /** The nats-server processes' CPU over the row (from the end of the previous row, stream set-up included), % of one core, summed over nodes. */
  serverCpuPct?: number;
  /** The gateway's CPU (primary and worker) over its publish rows, % of one core. */
  gatewayCpuPct?: number;
  /** The busiest Node load-tool process of the row (pub-cluster or nats.js client), average % of one core. */
  toolCpuPct?: number;
  /** Peak resident memory of the client process (KV watch rows). */
  rssMb?: number;
  status: RowStatus;
  note?: string;
  /** The nats-bench-style result lines. */
  lines: string[];
};

export function ratesFromBench(outs: readonly BenchOutput[]): Rates {
  const cs: BenchClient[] = outs.flatMap((o) => o.clients);
  const r = cs.map((c) => c.msgsPerSec);
  return {
    clients: cs.length,
    min: Math.min(...r),
    avg: r.reduce((a, b) => a + b, 0) / Math.max(r.length, 1),
    max: Math.max(...r),
    aggregate: outs.reduce((a, o) => a + o.aggregate, 0),
  };
}

export function ratesFromNode(rs: readonly NodeRates[]): Rates {
  const r = rs.flatMap((x) => x.perClient.map((c) => c.msgsPerSec));
  return {
    clients: r.length,
    min: Math.min(...r),
    avg: r.reduce((a, b) => a + b, 0) / Math.max(r.length, 1),
    max: Math.max(...r),
    aggregate: rs.reduce((a, x) => a + x.aggregate, 0),
  };
}

/** A publisher-side rate known only in aggregate (pub-cluster): each of `clients` publishers gets an equal share. */
export function ratesFromAggregate(aggregate: number, clients: number): Rates {
  const each = aggregate / clients;
  return { clients, min: each, avg: each, max: each, aggregate };
}

/** Publisher rates of pods run side by side: each pod's share per publisher, min/avg/max over the pods, aggregates added. */
export function ratesOverPods(shares: readonly Rates[]): Rates {
  return {
    clients: shares.reduce((a, x) => a + x.clients, 0),
    min: Math.min(...shares.map((x) => x.avg)),
    avg: shares.reduce((a, x) => a + x.avg, 0) / shares.length,
    max: Math.max(...shares.map((x) => x.avg)),
    aggregate: shares.reduce((a, x) => a + x.aggregate, 0),
  };
}

export function latencyFromNode(l: NodeLatency): Latency {
  return { avg: l.avgUs / 1000, min: l.minUs / 1000, max: l.maxUs / 1000, p50: l.p50Us / 1000, p99: l.p99Us / 1000, perMessage: l.perMessageUs / 1000 };
}

export function latencyFromBench(l: NonNullable<BenchOutput["latencyUs"]>, perMessageMs?: number): Latency {
  return {
    avg: l.avg / 1000,
    min: l.min / 1000,
    max: l.max / 1000,
    p50: l.p50 / 1000,
    p99: l.p99 / 1000,
    ...(perMessageMs !== undefined ? { perMessage: perMessageMs } : {}),
  };
}

/** nats-bench-style lines for a Node run, so both paths print alike. */
export function nodeLines(label: string, r: Rates, lat?: Latency): string[] {
  const f = (n: number): string => Math.round(n).toLocaleString("en-US");
  const out = [
    `${label} aggregated stats: ${f(r.aggregate)} msgs/sec`,
    `message rates min ${f(r.min)} | avg ${f(r.avg)} | max ${f(r.max)} (${r.clients} clients)`,
  ];
  if (lat)
    out.push(
      `latencies per operation min ${lat.min.toFixed(3)}ms | avg ${lat.avg.toFixed(3)}ms | max ${lat.max.toFixed(3)}ms | P50 ${lat.p50.toFixed(3)}ms | P99 ${lat.p99.toFixed(3)}ms`,
    );
  return out;
}

/** True when every figure a row claims is a finite number (what the smoke test checks). */
export function rowHasNumbers(r: Row): boolean {
  if (r.status !== "ok" || r.value === undefined || !Number.isFinite(r.value)) return false;
  const rates = [r.pub, r.sub].filter((x): x is Rates => x !== undefined);
  const lat = r.latency ? [r.latency.avg, r.latency.min, r.latency.max, r.latency.p50, r.latency.p99] : [];
  return rates.every((x) => [x.min, x.avg, x.max, x.aggregate].every(Number.isFinite)) && lat.every(Number.isFinite);
}
