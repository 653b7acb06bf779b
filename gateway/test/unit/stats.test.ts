import { describe, expect, it } from "vitest";
import { parsePrometheus, quantile, sampleFrom, statsBody, StatsWindow } from "../../src/http/stats.js";

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
