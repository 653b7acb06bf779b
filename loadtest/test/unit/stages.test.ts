// compare:peers' reading of the gateway's stage histograms from /metrics text.
import { describe, expect, it } from "vitest";
import { bucketQuantile, histogramBuckets, summarizeStages } from "../../compare/stages.js";

const TEXT = `# HELP fanout_delivery_latency_seconds x
fanout_delivery_latency_seconds_bucket{le="0.001"} 50
fanout_delivery_latency_seconds_bucket{le="0.01"} 90
fanout_delivery_latency_seconds_bucket{le="0.1"} 100
fanout_delivery_latency_seconds_bucket{le="+Inf"} 100
fanout_live_turn_messages_bucket{le="1",worker="1"} 10
fanout_live_turn_messages_bucket{le="2",worker="1"} 20
fanout_live_turn_messages_bucket{le="+Inf",worker="1"} 20
fanout_live_turn_messages_bucket{le="1",worker="2"} 0
fanout_live_turn_messages_bucket{le="2",worker="2"} 20
fanout_live_turn_messages_bucket{le="+Inf",worker="2"} 20
nodejs_eventloop_lag_p99_seconds 0.0125
`;

describe("stages", () => {
  it("stages — buckets of every label set are summed by bound, and quantiles are linear within a bucket", () => {
    expect(histogramBuckets(TEXT, "fanout_live_turn_messages")).toEqual([
      [1, 10],
      [2, 40],
      [Infinity, 40],
    ]);
    const b = histogramBuckets(TEXT, "fanout_delivery_latency_seconds");
    expect(bucketQuantile(b, 0.5)).toBeCloseTo(0.001, 9);
    expect(bucketQuantile(b, 0.99)).toBeCloseTo(0.01 + 0.09 * 0.9, 9);
    expect(
      bucketQuantile(
        [
          [1, 0],
          [Infinity, 0],
        ],
        0.5,
      ),
    ).toBeNaN();
  });

  it("stages — the summary names each stage present, and the event loop's p99 lag in ms", () => {
    const s = summarizeStages(TEXT);
    expect(s.storedToHub?.count).toBe(100);
    expect(s.messagesPerTurn?.p50).toBeCloseTo(1 + 10 / 30, 9);
    expect(s.publishToStored).toBeUndefined();
    expect(s.eventLoopLagP99Ms).toBeCloseTo(12.5, 9);
  });
});
