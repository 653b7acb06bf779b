import { describe, expect, it } from "vitest";
import { SEQ_WINDOW, SeqResult, SeqTracker } from "../../src/seq-tracker.js";

function feed(seqs: number[], fromOne = true): SeqTracker {
  const t = new SeqTracker(fromOne);
  for (const s of seqs) t.see(s);
  return t;
}

describe("seq-tracker — loss, duplicates, order", () => {
  it("seq-tracker — an in-order run has nothing lost, duplicated or out of order", () => {
    const t = feed([1, 2, 3, 4, 5]);
    t.end(5);
    expect([t.distinct, t.expected(), t.lost(), t.duplicates, t.outOfOrder]).toEqual([5, 5, 0, 0, 0]);
  });

  it("seq-tracker — gaps are lost, including a missing tail announced by the end marker", () => {
    const t = feed([1, 2, 4, 7]);
    expect(t.lost()).toBe(3); // 3, 5, 6
    t.end(9);
    expect(t.expected()).toBe(9);
    expect(t.lost()).toBe(5); // 3, 5, 6, 8, 9
  });

  it("seq-tracker — a missing head counts when counting from 1, not when joining late", () => {
    expect(feed([3, 4, 5], true).lost()).toBe(2);
    expect(feed([3, 4, 5], false).lost()).toBe(0);
  });

  it("seq-tracker — repeats are duplicates, not extra messages", () => {
    const t = new SeqTracker(true);
    expect(t.see(1)).toBe(SeqResult.InOrder);
    expect(t.see(2)).toBe(SeqResult.InOrder);
    expect(t.see(2)).toBe(SeqResult.Duplicate);
    expect(t.see(1)).toBe(SeqResult.Duplicate);
    t.see(3);
    expect([t.distinct, t.duplicates, t.outOfOrder, t.lost()]).toEqual([3, 2, 0, 0]);
  });

  it("seq-tracker — a late arrival fills its gap as out-of-order, and a repeat of it is a duplicate", () => {
    const t = feed([1, 3, 2, 2, 4]);
    expect([t.distinct, t.outOfOrder, t.duplicates, t.lost()]).toEqual([4, 1, 1, 0]);
  });

  it("seq-tracker — a jump wider than the window clears old bits (no false duplicates)", () => {
    const far = 1 + SEQ_WINDOW * 3 + 5;
    const t = feed([1, far, far - 1]);
    expect(t.duplicates).toBe(0);
    expect(t.outOfOrder).toBe(1);
    // far - SEQ_WINDOW shares a bit position with far but was never seen.
    t.see(far - SEQ_WINDOW + 1);
    expect(t.duplicates).toBe(0);
    expect(t.lost()).toBe(far - 3 - 1);
  });

  it("seq-tracker — arrivals older than the window count as out-of-order and late", () => {
    const seqs = Array.from({ length: SEQ_WINDOW + 10 }, (_, i) => i + 2); // 2..SEQ_WINDOW+11, 1 missing
    const t = feed(seqs);
    t.see(1);
    expect([t.outOfOrder, t.late, t.duplicates, t.lost()]).toEqual([1, 1, 0, 0]);
  });

  it("seq-tracker — joining late and then seeing an earlier message extends the start", () => {
    const t = feed([5, 6, 4], false);
    expect([t.start, t.distinct, t.outOfOrder, t.lost()]).toEqual([4, 3, 1, 0]);
  });

  it("seq-tracker — memory per tracker is fixed whatever the sequence range", () => {
    const t = new SeqTracker(true);
    for (let s = 1; s <= 100_000; s += 3) t.see(s);
    expect(t.lost()).toBe(100_000 - t.distinct);
    expect(t.distinct).toBe(33_334);
  });
});
