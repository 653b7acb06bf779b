import { ErrorCode } from "../protocol/codes.js";
import type { TemplatedApp } from "../uws.js";
import { send, sendError, track } from "./respond.js";

/**
 * `GET /v1/stats`: a small JSON summary for the live page, made by the primary from the same scrape of the
 * workers that `/metrics` aggregates: the cluster's totals, and each worker's share in `perWorker`.
 *
 * Rates and latency percentiles are over a recent window: the primary keeps the samples it took in the last
 * RETAIN_MS (for the cluster and for each worker) and compares the new one with the newest sample at least
 * WINDOW_MS old (or the oldest it has). That keeps the window near one second however many pages poll. The
 * first call has no window yet (`rates: null`); cumulative totals are always included, so a caller can also
 * compute its own rates from two samples.
 */
export const STATS_PATH = "/v1/stats";
const WINDOW_MS = 1_000;
const RETAIN_MS = 15_000;
const MIN_SAMPLE_GAP_MS = 200;

export type PromSample = { name: string; labels: Record<string, string>; value: number };

/** Parses Prometheus text exposition (the subset prom-client writes): one sample per non-comment line. */
export function parsePrometheus(text: string): PromSample[] {
  const out: PromSample[] = [];
  for (const line of text.split("\n")) {
    if (line.length === 0 || line.startsWith("#")) continue;
    const [, name, labelText, raw] = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line) ?? [];
    if (name === undefined || raw === undefined) continue;
    const labels: Record<string, string> = {};
    for (const [, key, quoted] of labelText?.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g) ?? [])
      if (key !== undefined && quoted !== undefined) labels[key] = quoted.replace(/\\(.)/g, (_s, c: string) => (c === "n" ? "\n" : c));
    const value = raw === "+Inf" ? Infinity : raw === "-Inf" ? -Infinity : Number(raw);
    out.push({ name, labels, value });
  }
  return out;
}

/** Bucket upper bounds (seconds) and cumulative counts, +Inf last. */
export type Buckets = { le: number[]; counts: number[] };

/** The numbers the page shows, at one instant. */
export type StatsSample = {
  at: number;
  workers: number;
  connections: number;
  /** Open Server-Sent Events streams (not in `connections`, which counts WebSockets). */
  sseStreams: number;
  subscriptions: number;
  channels: number;
  publishes: number;
  brokerMessages: number;
  framesDelivered: number;
  deliveriesDropped: number;
  latency: Buckets;
};

export function sampleFrom(samples: PromSample[], at: number): StatsSample {
  const sum = (name: string, pred: (l: Record<string, string>) => boolean = () => true) =>
    samples.reduce((acc, s) => (s.name === name && pred(s.labels) ? acc + s.value : acc), 0);
  // Buckets of the same bound are summed: the samples may be several workers' (or several series').
  const byLe = new Map<number, number>();
  for (const s of samples)
    if (s.name === "fanout_delivery_latency_seconds_bucket") {
      const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
      byLe.set(le, (byLe.get(le) ?? 0) + s.value);
    }
  const buckets = [...byLe].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
  return {
    at,
    workers: sum("fanout_workers"),
    connections: sum("fanout_connections"),
    sseStreams: sum("fanout_sse_connections"),
    subscriptions: sum("fanout_subscriptions"),
    channels: sum("fanout_live_feeds"),
    publishes: sum("fanout_publishes_total", (l) => l.result === "ok"),
    brokerMessages: sum("fanout_broker_messages_total"),
    framesDelivered: sum("fanout_frames_delivered_total"),
    deliveriesDropped: sum("fanout_deliveries_dropped_total"),
    latency: { le: buckets.map((b) => b.le), counts: buckets.map((b) => b.count) },
  };
}

/**
 * The q-quantile (0..1) of a cumulative histogram, interpolating linearly inside the bucket as Prometheus'
 * histogram_quantile does; undefined without observations. Values in the +Inf bucket report the largest bound.
 */
export function quantile(q: number, b: Buckets): number | undefined {
  const total = b.counts[b.counts.length - 1] ?? 0;
  if (total <= 0) return undefined;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const [i, le] of b.le.entries()) {
    const count = b.counts[i] ?? prevCount;
    if (count >= rank && count > prevCount) {
      if (le === Infinity) return prevLe;
      return prevLe + ((le - prevLe) * (rank - prevCount)) / (count - prevCount);
    }
    prevLe = le === Infinity ? prevLe : le;
    prevCount = count;
  }
  return prevLe;
}

const minus = (a: Buckets, b: Buckets): Buckets =>
  a.le.length === b.le.length ? { le: a.le, counts: a.counts.map((c, i) => Math.max(0, c - (b.counts[i] ?? 0))) } : a;

const round = (v: number | undefined, digits: number): number | null => (v === undefined || !Number.isFinite(v) ? null : Number(v.toFixed(digits)));

type RateKey = "publishes" | "brokerMessages" | "framesDelivered" | "deliveriesDropped";

/** Per-second rate of a counter between two samples (null without a base). */
function rateOf(now: StatsSample, base: StatsSample | undefined, k: RateKey): number | null {
  const dt = base ? (now.at - base.at) / 1000 : 0;
  return base && dt > 0 ? round(Math.max(0, now[k] - base[k]) / dt, 1) : null;
}

/** Latency percentiles over the window when it saw messages, else since start. */
function latencyOf(now: StatsSample, base: StatsSample | undefined) {
  const recent = base ? minus(now.latency, base.latency) : now.latency;
  const recentCount = recent.counts[recent.counts.length - 1] ?? 0;
  const lat = recentCount > 0 ? recent : now.latency;
  const ms = (q: number) => round((quantile(q, lat) ?? NaN) * 1000, 3);
  return {
    p50: ms(0.5),
    p90: ms(0.9),
    p99: ms(0.99),
    observations: recentCount > 0 ? recentCount : (lat.counts[lat.counts.length - 1] ?? 0),
    over: recentCount > 0 ? ("window" as const) : ("since start" as const),
  };
}

/** One worker's share, as `/v1/stats` lists it in `perWorker`. */
export type WorkerStats = {
  /** Its slot, 1..WORKERS: a restarted worker keeps the number of the one it replaced. */
  worker: number;
  /** Its process id (absent when unknown). */
  pid?: number;
  connections: number;
  sseStreams: number;
  rates: { publishesPerSec: number | null; framesOutPerSec: number | null; droppedPerSec: number | null } | null;
  latencyMs: { p50: number | null; p99: number | null; over: "window" | "since start" };
};

export function workerStats(worker: number, now: StatsSample, base: StatsSample | undefined, pid?: number): WorkerStats {
  const lat = latencyOf(now, base);
  return {
    worker,
    ...(pid !== undefined ? { pid } : {}),
    connections: now.connections,
    sseStreams: now.sseStreams,
    rates: base
      ? {
          publishesPerSec: rateOf(now, base, "publishes"),
          framesOutPerSec: rateOf(now, base, "framesDelivered"),
          droppedPerSec: rateOf(now, base, "deliveriesDropped"),
        }
      : null,
    latencyMs: { p50: lat.p50, p99: lat.p99, over: lat.over },
  };
}

/** The JSON body of `/v1/stats` for a new sample compared with an older one (rates need `base`). */
export function statsBody(now: StatsSample, base: StatsSample | undefined, perWorker: WorkerStats[] = []) {
  return {
    at: now.at,
    windowMs: base ? now.at - base.at : null,
    workers: now.workers,
    connections: now.connections,
    sseStreams: now.sseStreams,
    subscriptions: now.subscriptions,
    channels: now.channels,
    totals: {
      publishes: now.publishes,
      brokerMessages: now.brokerMessages,
      framesDelivered: now.framesDelivered,
      deliveriesDropped: now.deliveriesDropped,
      latencyObservations: now.latency.counts[now.latency.counts.length - 1] ?? 0,
    },
    rates: base
      ? {
          publishesPerSec: rateOf(now, base, "publishes"),
          brokerMessagesPerSec: rateOf(now, base, "brokerMessages"),
          framesOutPerSec: rateOf(now, base, "framesDelivered"),
          droppedPerSec: rateOf(now, base, "deliveriesDropped"),
        }
      : null,
    latencyMs: latencyOf(now, base),
    perWorker,
  };
}

/**
 * The webhook sender's lag for `/v1/stats`, from the primary's own samples (events/metrics.ts): null when
 * this instance runs no sender. `pending` and `oldestPendingSeconds` are the deployment's (one consumer);
 * `sending`, `calls` and `failures` are this instance's.
 */
export function webhookStats(samples: readonly PromSample[]) {
  const one = (name: string) => samples.find((s) => s.name === name)?.value;
  const pending = one("fanout_webhook_pending");
  if (pending === undefined) return null;
  const calls = (ok: boolean) =>
    samples.reduce((acc, s) => (s.name === "fanout_webhook_calls_total" && (s.labels.result === "ok") === ok ? acc + s.value : acc), 0);
  return {
    pending,
    oldestPendingSeconds: round(one("fanout_webhook_oldest_pending_seconds"), 1),
    sending: one("fanout_webhook_sending") === 1,
    calls: calls(true),
    failures: calls(false),
    dropped: one("fanout_webhook_dropped_total") ?? 0,
  };
}

/**
 * Regions: how far behind the home region each of this region's mirrors is, for `/v1/stats` and the live page,
 * from the primary's own `fanout_region_mirror_lag_messages` (instance/region-metrics.ts): null without
 * mirrors (no regions, or the home region).
 */
export function regionStats(samples: readonly PromSample[]): { mirrors: { stream: string; lag: number }[] } | null {
  const mirrors = samples.filter((s) => s.name === "fanout_region_mirror_lag_messages").map((s) => ({ stream: String(s.labels.stream), lag: s.value }));
  return mirrors.length > 0 ? { mirrors } : null;
}

/** Keeps this worker's recent samples and picks the base for a new one. */
export class StatsWindow {
  private samples: StatsSample[] = [];

  add(s: StatsSample): StatsSample | undefined {
    this.samples = this.samples.filter((x) => s.at - x.at <= RETAIN_MS && x.at < s.at);
    let base: StatsSample | undefined;
    for (const x of this.samples) if (s.at - x.at >= WINDOW_MS) base = x; // newest one old enough
    base ??= this.samples[0];
    const newest = this.samples[this.samples.length - 1];
    if (!newest || s.at - newest.at >= MIN_SAMPLE_GAP_MS) this.samples.push(s);
    return base;
  }
}

/**
 * The windows of the whole cluster and of each worker (keyed by cluster worker id, which a restarted worker
 * does not reuse; a worker that is gone loses its window), turning one scrape into a `/v1/stats` body. Each
 * worker is listed as `worker` (its slot; the id when not given), in that order.
 */
export class ClusterStatsWindows {
  private readonly total = new StatsWindow();
  private perWorker = new Map<number, StatsWindow>();

  body(total: StatsSample, workers: { id: number; worker?: number; pid?: number; sample: StatsSample }[]) {
    const next = new Map<number, StatsWindow>();
    const per = workers
      .map((w) => ({ ...w, worker: w.worker ?? w.id }))
      .sort((a, b) => a.worker - b.worker || a.id - b.id)
      .map(({ id, worker, pid, sample }) => {
        const w = this.perWorker.get(id) ?? new StatsWindow();
        next.set(id, w);
        return workerStats(worker, sample, w.add(sample), pid);
      });
    this.perWorker = next;
    return statsBody(total, this.total.add(total), per);
  }
}

/** `GET /v1/stats` on a worker: the body is made by the primary, which sees every worker. */
export function registerStatsRoute(app: TemplatedApp, clusterStats: () => Promise<string>): void {
  app.get(STATS_PATH, (res) => {
    const st = track(res);
    clusterStats().then(
      (body) => send(res, st, 200, body, "application/json"),
      (e) => sendError(res, st, { code: ErrorCode.StatsUnavailable, message: (e as Error).message }),
    );
  });
}
