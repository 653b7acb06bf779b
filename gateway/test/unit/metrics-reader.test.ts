// The tests' one metrics reader (gateway/testkit/metrics.ts) on a fixed scrape: labels, families without a sample, and
// names that do not exist.
import { describe, expect, it } from "vitest";
import { Scrape } from "#testkit/metrics.js";

const TEXT = [
  "# HELP fanout_direct_gets_total Direct gets",
  "# TYPE fanout_direct_gets_total counter",
  'fanout_direct_gets_total{via="link"} 12',
  'fanout_direct_gets_total{via="main"} 3',
  "# TYPE fanout_bad_frames_total counter",
  "# TYPE fanout_live_feeds gauge",
  "fanout_live_feeds 4",
  "fanout_live_feeds_other 9",
  "# TYPE fanout_presence_refresh_seconds histogram",
  'fanout_presence_refresh_seconds_bucket{le="+Inf"} 7',
  "fanout_presence_refresh_seconds_count 7",
].join("\n");

describe("metrics reader — one sample by name and labels", () => {
  const s = new Scrape(TEXT);
  it("metrics reader — picks the sample with the labels asked for; without labels, the first of the name", () => {
    expect(s.value("fanout_direct_gets_total", { via: "main" })).toBe(3);
    expect(s.value("fanout_direct_gets_total")).toBe(12);
    expect(s.value("fanout_live_feeds")).toBe(4); // not fanout_live_feeds_other
    expect(s.value("fanout_presence_refresh_seconds_count")).toBe(7);
  });

  it("metrics reader — a declared family without the sample is 0; an undeclared name is NaN", () => {
    expect(s.value("fanout_bad_frames_total", { code: "forbidden" })).toBe(0);
    expect(s.value("fanout_direct_gets_total", { via: "elsewhere" })).toBe(0);
    expect(s.value("fanout_no_such_metric")).toBeNaN();
  });
});
