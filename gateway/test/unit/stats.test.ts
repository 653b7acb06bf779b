import client from "prom-client";
import { describe, expect, it } from "vitest";
import { ClusterStatsWindows, parsePrometheus, quantile, sampleFrom, statsBody, StatsWindow } from "../../src/http/stats.js";
import { samplesOf } from "../../src/instance/instance-metrics.js";
import { createMetrics } from "../../src/metrics/metrics.js";

const TEXT = `# HELP fanout_connections Open WebSocket connections
# TYPE fanout_connections gauge
fanout_connections 3
fanout_sse_connections 4
fanout_live_feeds 2
fanout_workers 2
fanout_publishes_total{result="ok",via="ws"} 10
fanout_publishes_total{result="ok",via="http"} 5
fanout_publishes_total{result="error",via="http"} 7
fanout_frames_delivered_total 40
fanout_delivery_latency_seconds_bucket{le="0.001"} 50
fanout_delivery_latency_seconds_bucket{le="0.002"} 90
fanout_delivery_latency_seconds_bucket{le="+Inf"} 100
fanout_delivery_latency_seconds_count 100
`;

describe("stats — /v1/stats from aggregated Prometheus text", () => {
  it("stats — parses samples and sums counters over labels", () => {
    const s = sampleFrom(parsePrometheus(TEXT), 1_000);
    expect(s).toMatchObject({ connections: 3, sseStreams: 4, channels: 2, workers: 2, publishes: 15, framesDelivered: 40 });
    expect(s.latency).toEqual({ le: [0.001, 0.002, Infinity], counts: [50, 90, 100] });
  });

  it("stats — quantiles interpolate inside buckets; the +Inf bucket reports the largest bound", () => {
    const b = { le: [0.001, 0.002, Infinity], counts: [50, 90, 100] };
    expect(quantile(0.5, b)).toBeCloseTo(0.001);
    expect(quantile(0.7, b)).toBeCloseTo(0.0015);
    expect(quantile(0.99, b)).toBe(0.002);
    expect(quantile(0.5, { le: [0.001, Infinity], counts: [0, 0] })).toBeUndefined();
  });

  it("stats — rates come from the newest sample at least 1 s older; the first call has none", () => {
    const w = new StatsWindow();
    const at = (t: number, publishes: number) => ({ ...sampleFrom(parsePrometheus(TEXT), t), publishes });
    expect(w.add(at(0, 0))).toBeUndefined();
    w.add(at(600, 6));
    const base = w.add(at(1_300, 13));
    expect(base?.at).toBe(0);
    const body = statsBody(at(2_000, 20), w.add(at(2_000, 20)));
    expect(body.windowMs).toBe(1_400);
    expect(body.rates?.publishesPerSec).toBeCloseTo(10, 0);
  });
});

describe("stats — per worker, from each worker's registry", () => {
  it("stats — prom-client's JSON flattens into the samples the text parser gives", async () => {
    const registry = new client.Registry();
    const m = createMetrics(registry);
    m.connections.set(2);
    m.framesDelivered.inc(7);
    m.deliveryLatency.observe(0.0015);
    const fromJson = sampleFrom(samplesOf(await registry.getMetricsAsJSON()), 0);
    const fromText = sampleFrom(parsePrometheus(await registry.metrics()), 0);
    expect(fromJson).toEqual(fromText);
    expect(fromJson).toMatchObject({ connections: 2, framesDelivered: 7 });
    expect(fromJson.latency.counts.at(-1)).toBe(1);
  });

  it("stats — the cluster's sample from every worker's samples is the one from their aggregate (buckets summed by bound)", async () => {
    const workers = [new client.Registry(), new client.Registry()];
    const metrics = workers.map((r) => createMetrics(r));
    metrics[0]!.deliveryLatency.observe(0.0004);
    metrics[0]!.deliveryLatency.observe(0.003);
    metrics[1]!.deliveryLatency.observe(0.0015);
    metrics[1]!.framesDelivered.inc(5);
    const json = await Promise.all(workers.map((r) => r.getMetricsAsJSON()));
    const aggregated = await client.AggregatorRegistry.aggregate(json).metrics();
    const fromWorkers = sampleFrom(json.flatMap(samplesOf), 0);
    expect(fromWorkers).toEqual(sampleFrom(parsePrometheus(aggregated), 0));
    expect(fromWorkers.latency.counts.at(-1)).toBe(3);
    expect(fromWorkers.framesDelivered).toBe(5);
  });

  it("stats — each worker gets its own window; a worker that is gone loses it, a new one starts without rates", () => {
    const windows = new ClusterStatsWindows();
    const at = (t: number, framesDelivered: number, connections = 1) => ({ ...sampleFrom(parsePrometheus(TEXT), t), framesDelivered, connections });
    windows.body(at(0, 0), [
      { id: 1, sample: at(0, 0) },
      { id: 2, sample: at(0, 0) },
    ]);
    const b = windows.body(at(1_000, 30, 3), [
      { id: 2, sample: at(1_000, 20, 2) },
      { id: 1, sample: at(1_000, 10, 1) },
    ]);
    expect(b.rates?.framesOutPerSec).toBe(30);
    expect(b.perWorker.map((w) => [w.worker, w.connections, w.rates?.framesOutPerSec])).toEqual([
      [1, 1, 10],
      [2, 2, 20],
    ]);
    // Worker 2 restarted as worker 3: 3 starts without a window, and 2's is dropped.
    const c = windows.body(at(2_000, 40), [
      { id: 1, sample: at(2_000, 20) },
      { id: 3, sample: at(2_000, 0) },
    ]);
    expect(c.perWorker.map((w) => [w.worker, w.rates?.framesOutPerSec ?? null])).toEqual([
      [1, 10],
      [3, null],
    ]);
  });

  it("stats — a worker restarted in its slot is listed under the slot's number with its new pid, without the old one's window", () => {
    const windows = new ClusterStatsWindows();
    const at = (t: number, framesDelivered: number) => ({ ...sampleFrom(parsePrometheus(TEXT), t), framesDelivered });
    windows.body(at(0, 0), [
      { id: 1, worker: 1, pid: 101, sample: at(0, 0) },
      { id: 2, worker: 2, pid: 102, sample: at(0, 0) },
    ]);
    // Slot 2's worker died; cluster id 3 (pid 103) took slot 2. Listed by slot, the new worker has no rates yet.
    const b = windows.body(at(1_000, 500), [
      { id: 3, worker: 2, pid: 103, sample: at(1_000, 0) },
      { id: 1, worker: 1, pid: 101, sample: at(1_000, 10) },
    ]);
    expect(b.perWorker.map((w) => [w.worker, w.pid, w.rates?.framesOutPerSec ?? null])).toEqual([
      [1, 101, 10],
      [2, 103, null],
    ]);
  });
});
