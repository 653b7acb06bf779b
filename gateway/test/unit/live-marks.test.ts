// The live feed's recent positions (broker/jetstream/live.ts PositionMarks): where a resync reads back to.
import { describe, expect, it } from "vitest";
import { PositionMarks } from "../../src/broker/jetstream/live.js";

describe("live feed — position marks", () => {
  it("live marks — the position at a time is the newest mark at or before it; marks closer than the spacing are skipped", () => {
    const m = new PositionMarks(4, 250);
    m.note(10, 1_000);
    m.note(11, 1_100); // within 250 ms of the last mark: not kept
    m.note(20, 1_300);
    m.note(30, 1_600);
    expect(m.at(1_250)).toBe(10);
    expect(m.at(1_300)).toBe(20);
    expect(m.at(5_000)).toBe(30);
    // Older than every mark: the oldest kept (the feed's baseline when it is young).
    expect(m.at(0)).toBe(10);
  });

  it("live marks — the ring keeps the newest; cleared, there is no position (a resync then reads from the feed's own)", () => {
    const m = new PositionMarks(2, 0);
    m.note(1, 1);
    m.note(2, 2);
    m.note(3, 3);
    expect(m.at(0)).toBe(2);
    m.clear();
    expect(m.at(10)).toBe(Infinity);
  });
});
