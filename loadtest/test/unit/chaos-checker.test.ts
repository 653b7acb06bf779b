import { describe, expect, it } from "vitest";
import { check, matches, type PublishRecord, type Receipt, type StoredMsg, type SubscriberLog } from "../../chaos/checker.js";
import { buildSchedule, CLUSTER_FAULT_KINDS, FAULT_KINDS, faultKinds, REGION_FAULT_KINDS } from "../../chaos/schedule.js";

// Stream: a.x 1..6 interleaved with b.y.
const truth: StoredMsg[] = [
  { seq: 1, channel: "t.a", id: "m1" },
  { seq: 2, channel: "t.b", id: "m2" },
  { seq: 3, channel: "t.a", id: "m3" },
  { seq: 4, channel: "t.b", id: "m4" },
  { seq: 5, channel: "t.a", id: "m5" },
  { seq: 6, channel: "t.c.d", id: "m6" },
];
const rc = (seq: number, extra: Partial<Receipt> = {}): Receipt => {
  const m = truth.find((x) => x.seq === seq)!;
  return { t: seq, channel: m.channel, seq, id: m.id, ...extra };
};
const sub = (kind: SubscriberLog["kind"], pattern: string, seqs: Array<number | Receipt>, extra: Partial<SubscriberLog> = {}): SubscriberLog => ({
  client: `${kind}-${pattern}`,
  kind,
  pattern,
  fromSeq: 1,
  receipts: seqs.map((s) => (typeof s === "number" ? rc(s) : s)),
  ...extra,
});

describe("chaos checker — pure delivery checks on synthetic logs", () => {
  it("chaos checker — complete, ordered logs pass with every count 0", () => {
    const r = check(truth, [sub("resume", "t.*", [1, 2, 3, 4, 5]), sub("sse", "t.>", [1, 2, 3, 4, 5, 6]), sub("resume", "t.a", [1, 3, 5])], []);
    expect(r.ok).toBe(true);
    expect(r.expected).toBe(14);
    expect(r.received).toBe(14);
  });

  it("chaos checker — a gap is counted as lost with its channel and seq", () => {
    const r = check(truth, [sub("resume", "t.*", [1, 2, 4, 5])], []);
    expect(r.ok).toBe(false);
    expect(r.lost).toBe(1);
    expect(r.violations[0]).toMatchObject({ what: "lost", channel: "t.a", seq: 3 });
  });

  it("chaos checker — a message delivered twice is a duplicate (also across channels of a wildcard)", () => {
    const r = check(truth, [sub("sse", "t.>", [1, 2, 3, 2, 4, 5, 6])], []);
    expect(r.duplicated).toBe(1);
    expect(r.outOfOrder).toBe(0);
    expect(r.ok).toBe(false);
  });

  it("chaos checker — an older seq after a newer one of the same channel is out of order; across channels it is not", () => {
    const reordered = check(truth, [sub("resume", "t.a", [1, 5, 3])], []);
    expect(reordered.outOfOrder).toBe(1);
    expect(reordered.lost).toBe(0);
    const acrossChannels = check(truth, [sub("resume", "t.*", [1, 3, 2, 5, 4])], []);
    expect(acrossChannels.ok).toBe(true);
  });

  it("chaos checker — a received seq whose payload id differs from the stream's is mismatched", () => {
    const r = check(truth, [sub("resume", "t.a", [rc(1), { ...rc(3), id: "m9" }, rc(5)])], []);
    expect(r.mismatched).toBe(1);
  });

  it("chaos checker — the start seq bounds what a subscriber is owed", () => {
    expect(check(truth, [sub("resume", "t.a", [3, 5], { fromSeq: 3 })], []).ok).toBe(true);
  });

  it("chaos checker — durables: redeliveries flagged as such pass, an unflagged repeat and a never-delivered message fail", () => {
    const ok = check(truth, [sub("durable", "t.a", [1, 3, rc(3, { redelivered: true }), 5], { acked: [1, 3, 5] })], []);
    expect(ok.ok).toBe(true);
    expect(ok.redelivered).toBe(1);
    expect(ok.durableUnacked).toBe(0);
    const bad = check(truth, [sub("durable", "t.a", [1, 3, 3], { acked: [1, 3] })], []);
    expect(bad.durableDuplicated).toBe(1);
    expect(bad.durableLost).toBe(1);
    expect(bad.durableUnacked).toBe(1);
  });

  it("chaos checker — an acked publish missing from the stream fails; a failed one that was stored is only counted", () => {
    const pubs: PublishRecord[] = [
      { id: "m1", channel: "t.a", via: "ws", t0: 0, t1: 1, seq: 1 },
      { id: "m7", channel: "t.a", via: "http", t0: 0, t1: 1, seq: 7 },
      { id: "m2", channel: "t.b", via: "nats", t0: 0, t1: 1, error: "timeout" },
      { id: "m8", channel: "t.b", via: "nats", t0: 0, t1: 1, error: "timeout" },
    ];
    const r = check(truth, [], pubs);
    expect(r.ackedMissing).toBe(1);
    expect(r.published).toEqual({ acked: 2, failed: 2, failedButStored: 1 });
    expect(r.ok).toBe(false);
  });

  it("chaos checker — one id stored twice in the stream is a violation", () => {
    const r = check([...truth, { seq: 7, channel: "t.a", id: "m1" }], [], []);
    expect(r.storedTwice).toBe(1);
  });

  it("chaos checker — pattern matching follows NATS wildcards", () => {
    expect(matches("t.*", "t.a")).toBe(true);
    expect(matches("t.*", "t.c.d")).toBe(false);
    expect(matches("t.>", "t.c.d")).toBe(true);
    expect(matches("t.>", "t")).toBe(false);
    expect(matches("t.a", "t.a")).toBe(true);
    expect(matches("t.a", "t.ab")).toBe(false);
  });
});

describe("chaos schedule — seeded and reproducible", () => {
  it("chaos schedule — the same seed gives the same schedule, another seed another one", () => {
    const a = buildSchedule({ seed: 42, durationMs: 120_000, meanGapMs: 5_000, kinds: FAULT_KINDS });
    expect(buildSchedule({ seed: 42, durationMs: 120_000, meanGapMs: 5_000, kinds: FAULT_KINDS })).toEqual(a);
    expect(buildSchedule({ seed: 43, durationMs: 120_000, meanGapMs: 5_000, kinds: FAULT_KINDS })).not.toEqual(a);
    expect(a.length).toBeGreaterThan(10);
    expect(a.every((f, i) => i === 0 || f.atMs > a[i - 1]!.atMs)).toBe(true);
  });

  it("chaos schedule — the kinds by topology: the cluster's by default, with --regions the region faults and no NATS node fault; a kind of the other topology refused", () => {
    expect(faultKinds(undefined, false)).toEqual([...CLUSTER_FAULT_KINDS]);
    const regions = faultKinds(undefined, true);
    expect(regions).toEqual(expect.arrayContaining([...REGION_FAULT_KINDS, "worker-kill", "link-delay", "client-burst"]));
    expect(regions).not.toContain("nats-kill");
    expect(regions).not.toContain("nats-pause");
    expect(faultKinds(["region-cut"], true)).toEqual(["region-cut"]);
    expect(() => faultKinds(["nats-pause"], true)).toThrow(/--kinds nats-pause: not in a --regions run/);
    expect(() => faultKinds(["worker-kill", "region-move"], false)).toThrow(/--kinds region-move: needs --regions/);
  });

  it("chaos schedule — every kind appears at least once when the run is long enough for a round of them", () => {
    const s = buildSchedule({ seed: 7, durationMs: FAULT_KINDS.length * 5_000, meanGapMs: 4_000, kinds: FAULT_KINDS });
    expect(new Set(s.map((f) => f.kind))).toEqual(new Set(FAULT_KINDS));
  });
});
