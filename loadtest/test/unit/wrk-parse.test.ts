import { describe, expect, it } from "vitest";
import { parseWrk } from "../../bench/wrk.js";

// wrk 4.1's report as bench:publish runs it (--latency, under bash, which then prints its own /proc stat).
const REPORT = `Running 1s test @ http://127.0.0.1:18999/
  1 threads and 4 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   298.58us  774.66us  12.09ms   93.84%
    Req/Sec    34.85k    16.68k   50.24k    80.00%
  Latency Distribution
     50%   99.00us
     75%  158.00us
     90%  640.00us
     99%    3.97ms
  34617 requests in 1.00s, 4.26MB read
Requests/sec:  34569.12
Transfer/sec:      4.25MB
stat: 24769 (bash) S 24747 24747 14977 0 -1 4194304 199 428 0 2 0 0 4 35 20 0 1 0 2264505 4464640 783
`;

describe("wrk report", () => {
  it("wrk — requests per second, the p50 and p99 in ms, and wrk's CPU from bash's cutime and cstime", () => {
    const r = parseWrk(REPORT, 1);
    expect(r.seconds).toBe(1);
    expect(r.msgsPerSec).toBe(34617);
    expect(r.p50Ms).toBeCloseTo(0.099, 6);
    expect(r.p99Ms).toBeCloseTo(3.97, 6);
    expect(r.clientCpuS).toBeCloseTo(0.39, 6);
  });

  it("wrk — non-2xx answers are not counted, and a batch counts its items", () => {
    const r = parseWrk(REPORT.replace("Requests/sec:", "  Non-2xx or 3xx responses: 617\nRequests/sec:").replace("in 1.00s", "in 2.00s"), 100);
    expect(r.msgsPerSec).toBe(((34617 - 617) * 100) / 2);
  });

  it("wrk — a report without its result line is an error that shows the output", () => {
    expect(() => parseWrk("unable to connect to 127.0.0.1:1 Connection refused\n", 1)).toThrow(/Connection refused/);
  });
});
