// From the samples to the verdict: one series per sampled figure (per worker where it is per worker), its
// trend after warm-up (trend.ts) against a materiality floor chosen per kind of figure, and every table's
// largest size against its bound. Pure: the run's samples and bounds in, the verdict out.
import { trend, type Materiality, type Point, type Trend } from "./trend.js";
import type { Sample } from "./sampler.js";

const MiB = 1_048_576;

/**
 * Growth that counts, per kind of figure. RSS and heap move by tens of MiB between collections; a leak of
 * one socket's state per session crosses these floors within the hour, noise does not.
 */
export const MATERIALITY: Record<string, Materiality> = {
  rss_bytes: { abs: 32 * MiB, rel: 0.15 },
  heap_used_bytes: { abs: 16 * MiB, rel: 0.2 },
  active_handles: { abs: 20, rel: 0.25 },
  open_fds: { abs: 20, rel: 0.25 },
  event_loop_lag_mean_ms: { abs: 5, rel: 0.5 },
  event_loop_lag_max_ms: { abs: 50, rel: 1 },
  nats_rss_bytes: { abs: 64 * MiB, rel: 0.25 },
  primary_rss_bytes: { abs: 32 * MiB, rel: 0.15 },
  consumers: { abs: 3, rel: 0 },
  /** Any table not named above. */
  table: { abs: 10, rel: 0.25 },
};

/** Figures reported but not judged: they grow by design (the stream keeps every message of the run). */
export const NOT_JUDGED = new Set(["stream_messages"]);

/**
 * Caches that fill up to their bound by design and evict from there (least recently used first): judged by
 * their bound only, since filling up is not a leak and their bound is what keeps them from being one.
 */
export const BOUND_ONLY = new Set(["replay_cache_bytes", "replay_cache_pages", "hook_cache_connect", "hook_cache_subscribe"]);

/** A bounded table's growth counts from a quarter of its bound on (or the floor above, if larger). */
export const BOUND_SHARE = 0.25;

export type Series = { name: string; kind: string; worker?: string; points: Point[]; bound?: number };

export type SeriesResult = {
  name: string;
  kind: string;
  trend: Trend;
  judged: boolean;
  bound?: number;
  maxSeen: number;
  overBound: boolean;
  /** Every sample's value (the report draws them). */
  values: number[];
};

export type Verdict = {
  ok: boolean;
  failures: string[];
  series: SeriesResult[];
  workersSeen: string[];
};

/** Splits the samples into series: `w<id>.<figure>` per worker (and pid, after a restart), the rest global. */
export function seriesOf(samples: readonly Sample[], bounds: Record<string, number>): Series[] {
  const out = new Map<string, Series>();
  const add = (name: string, kind: string, t: number, v: number, worker?: string) => {
    if (!Number.isFinite(v)) return;
    let s = out.get(name);
    if (!s) out.set(name, (s = { name, kind, points: [], ...(worker ? { worker } : {}), ...(bounds[kind] !== undefined ? { bound: bounds[kind] } : {}) }));
    s.points.push([t, v]);
  };
  const pidsOf = new Map<string, Set<number>>();
  for (const s of samples) for (const w of s.workers) pidsOf.set(w.worker, (pidsOf.get(w.worker) ?? new Set()).add(w.pid));
  for (const s of samples) {
    for (const w of s.workers) {
      const id = (pidsOf.get(w.worker)?.size ?? 1) > 1 ? `w${w.worker}-${w.pid}` : `w${w.worker}`;
      add(`${id}.rss_bytes`, "rss_bytes", s.t, w.rssBytes, id);
      add(`${id}.open_fds`, "open_fds", s.t, w.openFds, id);
      for (const [what, v] of Object.entries(w.state)) add(`${id}.${what}`, what, s.t, v, id);
    }
    add("primary.rss_bytes", "primary_rss_bytes", s.t, s.primaryRssBytes);
    add("nats.rss_bytes", "nats_rss_bytes", s.t, s.natsRssBytes);
    add("stream.consumers", "consumers", s.t, s.consumers);
    add("stream.messages", "stream_messages", s.t, s.streamMessages);
  }
  return [...out.values()];
}

export function judge(samples: readonly Sample[], o: { warmupS: number; bounds: Record<string, number>; expectWorkers: number }): Verdict {
  const failures: string[] = [];
  const results: SeriesResult[] = [];
  for (const s of seriesOf(samples, o.bounds)) {
    const measured = s.points.filter(([t]) => t >= o.warmupS);
    const base = MATERIALITY[s.kind] ?? MATERIALITY.table!;
    const m = s.bound !== undefined ? { ...base, abs: Math.max(base.abs, BOUND_SHARE * s.bound) } : base;
    const tr = trend(measured, m);
    const judged = !NOT_JUDGED.has(s.kind) && !BOUND_ONLY.has(s.kind);
    const values = s.points.map((p) => p[1]);
    const maxSeen = Math.max(...values);
    const overBound = s.bound !== undefined && maxSeen > s.bound;
    results.push({ name: s.name, kind: s.kind, trend: tr, judged, ...(s.bound !== undefined ? { bound: s.bound } : {}), maxSeen, overBound, values });
    if (judged && tr.grows && tr.fit)
      failures.push(
        `${s.name} grows: ${fmt(tr.fit.slopePerHour)}/h (95% CI ${fmt(tr.fit.ciLowPerHour)} to ${fmt(tr.fit.ciHighPerHour)}), +${fmt(tr.fit.growth)} over ${Math.round(tr.fit.windowS)} s (threshold ${fmt(tr.threshold)})`,
      );
    if (overBound) failures.push(`${s.name} reached ${maxSeen}, past its bound ${s.bound}`);
  }
  const workersSeen = [...new Set(samples.flatMap((s) => s.workers.map((w) => w.worker)))].sort();
  if (workersSeen.length < o.expectWorkers) failures.push(`samples from ${workersSeen.length} workers, expected ${o.expectWorkers}`);
  const measuredSamples = samples.filter((s) => s.t >= o.warmupS);
  for (const w of workersSeen) {
    const n = measuredSamples.filter((s) => s.workers.some((x) => x.worker === w)).length;
    if (n < 3) failures.push(`worker ${w}: ${n} samples after warm-up (need 3 or more for a trend)`);
  }
  const restarts = samples.at(-1)?.workerRestarts ?? 0;
  if (restarts > 0) failures.push(`${restarts} worker restart(s) during the run`);
  return { ok: failures.length === 0, failures, series: results, workersSeen };
}

/** A number for people: MiB for bytes-sized values, else up to 3 significant decimals. */
export function fmt(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (Math.abs(v) >= MiB) return `${(v / MiB).toFixed(1)} MiB`;
  if (Math.abs(v) >= 100) return v.toFixed(0);
  return Number(v.toPrecision(3)).toString();
}
