import cluster, { type Worker } from "node:cluster";
import client from "prom-client";
import { ClusterStatsWindows, regionStats, sampleFrom, webhookStats, type PromSample } from "../http/stats.js";
import { runtimeInfo } from "../uws.js";
import { SharedQuery } from "../util/shared-query.js";
import { isFgwMessage, type MetricsJson, type ToPrimary, type ToWorker } from "./ipc.js";
import type { EffectiveSettings } from "../namespaces/settings.js";

/** How long a scrape waits for every worker (prom-client's own cluster scrape waits as long). */
const SCRAPE_TIMEOUT_MS = 5_000;

type Scrape = { text: string; contentType: string; workers: { id: number; worker: number; pid?: number; samples: PromSample[] }[]; own: PromSample[] };

/**
 * Metrics of all workers, scraped by the primary over IPC (each worker answers with its registry as JSON),
 * aggregated with prom-client's AggregatorRegistry for `/metrics`, and kept per worker for `/v1/stats`; plus
 * the primary's own (restarts, workers). Concurrent requests share one scrape started after they asked
 * (fresh, yet a flood of N requests costs at most two scrapes at a time, not N).
 */
export class InstanceMetrics {
  private readonly own = new client.Registry();
  readonly restarts: client.Counter;
  private readonly scrape = new SharedQuery(() => this.collect());
  private readonly windows = new ClusterStatsWindows();
  private nextId = 0;
  private readonly pending = new Map<number, { waiting: Set<number>; got: { id: number; metrics: MetricsJson }[]; done: (error?: string) => void }>();
  /** Each live worker's slot (its number in /v1/stats), by cluster id. */
  private readonly slots = new Map<number, number>();
  /** Workers that listen (cluster ids): only they are scraped, a worker still starting may not answer yet. */
  private readonly listening = new Set<number>();

  /** `settings`: the streams' and namespaces' settings in effect, shown in `/v1/stats` (JetStream only). */
  constructor(private readonly settings?: EffectiveSettings) {
    this.restarts = new client.Counter({ name: "fanout_worker_restarts_total", help: "Workers restarted after a crash", registers: [this.own] });
    new client.Gauge({
      name: "fanout_workers",
      help: "Worker processes running",
      registers: [this.own],
      collect() {
        this.set(Object.keys(cluster.workers ?? {}).length);
      },
    });
  }

  /** The primary's own registry (served after the workers' aggregate). */
  get registry(): client.Registry {
    return this.own;
  }

  /** Prometheus text of every worker and the primary. */
  async text(): Promise<{ text: string; contentType: string }> {
    const s = await this.scrape.get();
    return { text: s.text, contentType: s.contentType };
  }

  /** The body of `/v1/stats` (rates over a recent window kept here, for the cluster and for each worker). */
  async stats(): Promise<string> {
    const s = await this.scrape.get();
    const at = Date.now();
    const all = [...s.workers.flatMap((w) => w.samples), ...s.own];
    const body = this.windows.body(
      sampleFrom(all, at),
      s.workers.map((w) => ({ id: w.id, worker: w.worker, ...(w.pid !== undefined ? { pid: w.pid } : {}), sample: sampleFrom(w.samples, at) })),
    );
    return JSON.stringify({ ...body, webhook: webhookStats(s.own), regions: regionStats(s.own), runtime: runtimeInfo(), ...(this.settings ?? {}) });
  }

  /** A worker's answer to a scrape; the pool hands every `fgw:scrape-res` here. */
  onScrapeResponse(worker: Worker, m: ToPrimary & { type: "fgw:scrape-res" }): void {
    const p = this.pending.get(m.id);
    if (!p || !p.waiting.delete(worker.id)) return;
    if (m.error !== undefined) return p.done(`worker ${worker.id}: ${m.error}`);
    p.got.push({ id: worker.id, metrics: m.metrics });
    if (p.waiting.size === 0) p.done();
  }

  /** A worker was forked into `slot` (the pool calls this). */
  workerStarted(id: number, slot: number): void {
    this.slots.set(id, slot);
  }

  /** A worker listens: scrapes ask it from now on (the pool calls this). */
  workerListening(id: number): void {
    this.listening.add(id);
  }

  /** A worker exited: scrapes waiting for it go on without it (the pool calls this). */
  workerGone(id: number): void {
    this.slots.delete(id);
    this.listening.delete(id);
    for (const p of this.pending.values()) if (p.waiting.delete(id) && p.waiting.size === 0) p.done();
  }

  private async collect(): Promise<Scrape> {
    const workers = await this.scrapeWorkers();
    const aggregated = client.AggregatorRegistry.aggregate(workers.map((w) => w.metrics));
    const [text, mine, ownJson] = await Promise.all([aggregated.metrics(), this.own.metrics(), this.own.getMetricsAsJSON()]);
    return {
      text: `${text}\n${mine}`,
      contentType: this.own.contentType,
      workers: workers.map((w) => ({
        id: w.id,
        worker: this.slots.get(w.id) ?? w.id,
        pid: cluster.workers?.[w.id]?.process.pid,
        samples: samplesOf(w.metrics),
      })),
      own: samplesOf(ownJson),
    };
  }

  /** Asks every connected worker for its metrics; rejects if one does not answer in time, as prom-client does. */
  private scrapeWorkers(): Promise<{ id: number; metrics: MetricsJson }[]> {
    const id = ++this.nextId;
    const targets = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w && w.isConnected() && this.listening.has(w.id));
    return new Promise((resolve, reject) => {
      const got: { id: number; metrics: MetricsJson }[] = [];
      const waiting = new Set(targets.map((w) => w.id));
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`metrics scrape: ${[...waiting].map((w) => `worker ${w}`).join(", ")} did not answer in ${SCRAPE_TIMEOUT_MS} ms`));
      }, SCRAPE_TIMEOUT_MS);
      const done = (error?: string) => {
        clearTimeout(timer);
        this.pending.delete(id);
        if (error) reject(new Error(`metrics scrape: ${error}`));
        else resolve(got);
      };
      if (waiting.size === 0) return done();
      this.pending.set(id, { waiting, got, done });
      const req: ToWorker = { type: "fgw:scrape-req", id };
      for (const w of targets) w.send(req);
    });
  }
}

/** Flattens prom-client's JSON into samples (histogram values carry their own `metricName`). */
export function samplesOf(metrics: MetricsJson): PromSample[] {
  return metrics.flatMap((m) =>
    m.values.map((v) => ({
      name: (v as { metricName?: string }).metricName ?? m.name,
      labels: Object.fromEntries(Object.entries(v.labels).map(([k, l]) => [k, String(l)])),
      value: v.value,
    })),
  );
}

/** In a worker: answers the primary's scrapes with this process's registry. */
export function answerScrapes(registry: client.Registry = client.register): void {
  process.on("message", (m: unknown) => {
    if (!isFgwMessage(m) || (m as ToWorker).type !== "fgw:scrape-req") return;
    const id = (m as ToWorker & { type: "fgw:scrape-req" }).id;
    registry.getMetricsAsJSON().then(
      (metrics) => process.send?.({ type: "fgw:scrape-res", id, metrics } satisfies ToPrimary),
      (e: unknown) => process.send?.({ type: "fgw:scrape-res", id, metrics: [], error: (e as Error).message } satisfies ToPrimary),
    );
  });
}
