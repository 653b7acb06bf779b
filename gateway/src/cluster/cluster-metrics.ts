import cluster from "node:cluster";
import client from "prom-client";
import { parsePrometheus, sampleFrom, statsBody, StatsWindow } from "../http/stats.js";
import { Coalescer } from "../util/coalesce.js";

/**
 * Metrics of all workers, aggregated by the primary (prom-client's AggregatorRegistry asks every worker over
 * IPC), plus the primary's own (restarts, workers). Concurrent requests share one aggregation started
 * after they asked (fresh, yet a flood of N requests costs at most two aggregations at a time, not N).
 */
export class ClusterMetrics {
  private readonly aggregator = new client.AggregatorRegistry();
  private readonly own = new client.Registry();
  readonly restarts: client.Counter;
  private readonly scrape = new Coalescer(() =>
    Promise.all([this.aggregator.clusterMetrics(), this.own.metrics()]).then(([text, mine]) => ({
      text: `${text}\n${mine}`,
      contentType: this.aggregator.contentType,
    })),
  );
  private readonly window = new StatsWindow();

  constructor() {
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

  /** Prometheus text of every worker and the primary. */
  text(): Promise<{ text: string; contentType: string }> {
    return this.scrape.get();
  }

  /** The body of `/v1/stats` (rates over a recent window kept here). */
  async stats(): Promise<string> {
    const sample = sampleFrom(parsePrometheus((await this.text()).text), Date.now());
    return JSON.stringify(statsBody(sample, this.window.add(sample)));
  }
}
