// The live path's turn meter: messages per event-loop turn and the time from a turn's first message to its end.
import client from "prom-client";
import { describe, expect, it } from "vitest";
import { createMetrics } from "../../src/metrics/metrics.js";
import { TurnMeter } from "../../src/fanout/turn-meter.js";

async function histogram(m: ReturnType<typeof createMetrics>, name: "liveTurnMessages" | "liveTurnSeconds") {
  const v = (await m[name].get()).values;
  return {
    count: v.find((x) => x.metricName?.endsWith("_count"))?.value,
    sum: v.find((x) => x.metricName?.endsWith("_sum"))?.value,
  };
}

describe("turn meter", () => {
  it("turn meter — one observation per turn that carried messages: its message count and the time from its first one", async () => {
    const m = createMetrics(new client.Registry());
    let now = 100;
    const pending: (() => void)[] = [];
    const meter = new TurnMeter(
      m,
      () => now,
      (f) => pending.push(f),
    );
    meter.message();
    now = 101;
    meter.message();
    meter.message();
    expect(pending).toHaveLength(1); // one end-of-turn callback, not one per message
    now = 104;
    pending.shift()!();
    meter.message();
    now = 106;
    pending.shift()!();
    expect(await histogram(m, "liveTurnMessages")).toEqual({ count: 2, sum: 4 });
    const s = await histogram(m, "liveTurnSeconds");
    expect(s.count).toBe(2);
    expect(s.sum).toBeCloseTo(0.004 + 0.002, 9);
  });
});
