// The chaos report's latency chart, in process: per-second percentiles and one band per fault.
import { describe, expect, it } from "vitest";
import { latencySeries, renderLatencyChart } from "../../chaos/chart.js";
import type { SubscriberLog } from "../../chaos/checker.js";
import type { FaultRecord } from "../../chaos/faults.js";

const T0 = 1_000_000;
const sub = (latencies: [number, number][]): SubscriberLog => ({
  client: "c",
  kind: "resume",
  pattern: "p",
  fromSeq: 1,
  receipts: latencies.map(([t, ms], i) => ({ t: T0 + t, channel: "p", seq: i + 1, latencyMs: ms })),
});

describe("chaos chart", () => {
  it("chaos chart — p50 and p99 per second of first deliveries; redeliveries and samples before the start left out", () => {
    const s = sub([
      [100, 5],
      [200, 7],
      [900, 100],
      [1_500, 3],
    ]);
    s.receipts.push({ t: T0 + 300, channel: "p", seq: 9, latencyMs: 9_999, redelivered: true }, { t: T0 - 5, channel: "p", seq: 10, latencyMs: 1 });
    expect(latencySeries([s], T0)).toEqual([
      { t: 0, p50: 7, p99: 100, n: 3 },
      { t: 1_000, p50: 3, p99: 3, n: 1 },
    ]);
  });

  it("chaos chart — the SVG has a band per fault (labelled by kind) and both lines with a point per second", () => {
    const faults = [
      { kind: "nats-kill", startedAt: T0 + 500, endedAt: T0 + 1_200 },
      { kind: "worker-kill", startedAt: T0 + 1_300, endedAt: T0 + 1_400 },
    ] as FaultRecord[];
    const svg = renderLatencyChart(
      latencySeries(
        [
          sub([
            [0, 4],
            [1_100, 40],
            [2_100, 8],
          ]),
        ],
        T0,
      ),
      faults,
      T0,
      "t",
    );
    expect(svg.match(/class="fault"/g)).toHaveLength(2);
    expect(svg).toContain('data-kind="nats-kill"');
    expect(svg).toContain(">worker-kill</text>");
    expect(/class="p99"[^>]*points="([^"]+)"/.exec(svg)![1]!.split(" ")).toHaveLength(3);
  });
});
