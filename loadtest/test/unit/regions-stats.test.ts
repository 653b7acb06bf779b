import { describe, expect, it } from "vitest";
import { latencySummary, netemCommands, oneWayDelayMs, resumeVerdict, type ResumeReceipt } from "../../bench/regions/stats.js";

const stored = (n: number, firstSeq = 10) => Array.from({ length: n }, (_, i) => ({ seq: firstSeq + i, i }));
const on = (conn: 1 | 2, ms: readonly { seq: number; i: number }[]): ResumeReceipt[] => ms.map((m) => ({ ...m, conn }));

describe("bench:regions — pure parts", () => {
  it("regions bench — the one-way delay: --delay as given, half of --rtt, 40 ms by default, both flags refused", () => {
    expect(oneWayDelayMs({})).toBe(40);
    expect(oneWayDelayMs({ delay: 25 })).toBe(25);
    expect(oneWayDelayMs({ rtt: 80 })).toBe(40);
    expect(() => oneWayDelayMs({ delay: 10, rtt: 20 })).toThrow(/--delay and --rtt/);
  });

  it("regions bench — netem goes on a band of its own, and only the link ports (both directions) are filtered to it", () => {
    const cmds = netemCommands("lo", [4301, 4302], 40).map((c) => c.join(" "));
    expect(cmds[0]).toBe("qdisc add dev lo root handle 1: prio bands 4 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1");
    expect(cmds[0]!.split(" priomap ")[1]!.split(" ")).not.toContain("3");
    expect(cmds[1]).toBe("qdisc add dev lo parent 1:4 handle 40: netem delay 40ms");
    expect(cmds.slice(2)).toEqual(
      [4301, 4302].flatMap((p) => ["dport", "sport"].map((d) => `filter add dev lo parent 1: protocol ip prio 1 u32 match ip ${d} ${p} 0xffff flowid 1:4`)),
    );
  });

  it("regions bench — latency percentiles and their excess over the one-way delay", () => {
    const s = latencySummary(
      Array.from({ length: 100 }, (_, i) => 41 + i / 10),
      40,
    );
    expect(s).toMatchObject({ samples: 100, p50Ms: 45.9, p99Ms: 50.8, maxMs: 50.9, excessP50Ms: 5.9, excessP99Ms: 10.8 });
  });

  it("regions bench — a clean move (first half on a, the rest on b) has no violation", () => {
    const all = stored(10);
    expect(resumeVerdict("ch", all, [...on(1, all.slice(0, 4)), ...on(2, all.slice(4))])).toEqual({ lost: 0, duplicated: 0, outOfOrder: 0, mismatched: 0 });
  });

  it("regions bench — a skipped message, one seen twice across the move, a reorder and a wrong payload are each counted", () => {
    const all = stored(10);
    expect(resumeVerdict("ch", all, [...on(1, all.slice(0, 4)), ...on(2, all.slice(5))])).toMatchObject({ lost: 1, duplicated: 0, firstLost: 14 });
    expect(resumeVerdict("ch", all, [...on(1, all.slice(0, 4)), ...on(2, all.slice(3))])).toMatchObject({ lost: 0, duplicated: 1 });
    const swapped = [...all.slice(0, 4), all[5]!, all[4]!, ...all.slice(6)];
    expect(resumeVerdict("ch", all, on(2, swapped)).outOfOrder).toBeGreaterThan(0);
    expect(
      resumeVerdict(
        "ch",
        all,
        on(
          2,
          all.map((m) => (m.seq === 12 ? { ...m, i: 99 } : m)),
        ),
      ).mismatched,
    ).toBe(1);
  });
});
