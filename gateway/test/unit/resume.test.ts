// The resume path's start positions in process, against the table every door is held to
// (gateway/testkit/start-cases.ts; the doors of a real gateway: resume-doors.test.ts).
import { describe, expect, it } from "vitest";
import type { ReplayApi, StreamState } from "../../src/broker/broker.js";
import { positionAfter, resolveStart, Resume, type StartRequest } from "../../src/fanout/resume.js";
import type { FanoutHub } from "../../src/fanout/hub.js";
import type { Feed } from "../../src/fanout/feed.js";
import type { Logger } from "../../src/log.js";
import { START_CASES, TABLE_FIRST, TABLE_LAST, type CaseStart } from "#testkit/start-cases.js";

const ST: StreamState = { firstSeq: TABLE_FIRST, lastSeq: TABLE_LAST, epoch: "E" };

/** The table's stream as a replay API: its bounds, and the two lookups a start may need. */
const replay = {
  state: async () => ST,
  startOfLastN: async (_p: string, n: number) => Math.max(TABLE_FIRST, TABLE_LAST - n + 1),
  seqAtTime: async () => TABLE_FIRST,
} as unknown as ReplayApi;

function request(s: CaseStart): StartRequest {
  if (s.kind === "timeBefore") return { kind: "time", time: "2000-01-01T00:00:00Z" };
  if (s.kind !== "after") return s;
  return { kind: "after", after: s.after, ...(s.epoch ? { epoch: s.epoch === "same" ? "E" : "OTHER" } : {}) };
}

describe("resume — start positions (one table for every door)", () => {
  for (const c of START_CASES) {
    it(`resume — ${c.name}`, async () => {
      const s = await resolveStart(replay, "t.c", request(c.start));
      expect(s.lastSent).toBe(c.lastSent);
      expect(s.report?.truncated === true).toBe(c.truncated === true);
      expect(s.report?.epochChanged === true).toBe(c.epochChanged === true);
      if (c.start.kind !== "live") expect(s.report).toMatchObject(ST);
      // What follows lastSent in the stream is what the receiver gets from the store.
      const stored = Array.from({ length: TABLE_LAST - TABLE_FIRST + 1 }, (_, i) => TABLE_FIRST + i);
      if (s.lastSent !== undefined) expect(stored.filter((q) => q > s.lastSent!)).toEqual(c.delivered);
    });
  }

  it("resume — a live start reads nothing from the broker; the others need one that keeps history", async () => {
    expect(await resolveStart(undefined, "x", { kind: "live" })).toEqual({});
    await expect(resolveStart(undefined, "x", { kind: "all" })).rejects.toMatchObject({ code: "unsupported_by_broker" });
  });

  it("resume — an empty stream: a resume of another epoch starts at 0, never below", () => {
    expect(positionAfter(9, "old", { firstSeq: 0, lastSeq: 0, epoch: "new" })).toEqual({ lastSent: 0, truncated: true, epochChanged: true });
    expect(positionAfter(9, "new", { firstSeq: 0, lastSeq: 0, epoch: "new" })).toEqual({ lastSent: 0 });
    // Purged to empty: first = last + 1.
    expect(positionAfter(3, undefined, { firstSeq: 11, lastSeq: 10, epoch: "e" })).toEqual({ lastSent: 10, truncated: true });
  });
});

describe("resume — after a pause (a slow receiver drained)", () => {
  const feed = { count: 12 } as Feed;
  const make = (pages: unknown) => {
    const dropped: number[] = [];
    const r = new Resume({ pages } as unknown as FanoutHub, { holdLimit: 10, backpressureBytes: 1 }, {} as Logger, { inc: (n) => dropped.push(n) });
    return { r, dropped };
  };

  it("resume — with history it continues after its last message and drops nothing", () => {
    const { r, dropped } = make({});
    expect(r.afterPause(feed, 40, 5)).toBe(40);
    expect(dropped).toEqual([]);
  });

  it("resume — without history it joins live and counts what it missed as dropped", () => {
    const { r, dropped } = make(undefined);
    expect(r.afterPause(feed, 40, 5)).toBeUndefined();
    expect(r.afterPause(feed, 40, 12)).toBeUndefined();
    expect(dropped).toEqual([7]);
  });
});

describe("resume — a namespace's resume window", () => {
  // TABLE_FIRST..TABLE_LAST stored; the window's first message is TABLE_FIRST + 2.
  const from = TABLE_FIRST + 2;
  const windowed = { ...replay, state: async () => ({ ...ST, resumeFrom: from }) } as unknown as ReplayApi;

  it("resume — a start before the window begins at its first message, reported truncated", async () => {
    for (const req of [{ kind: "all" }, { kind: "after", after: TABLE_FIRST, epoch: "E" }, { kind: "time", time: "2000-01-01T00:00:00Z" }] as StartRequest[]) {
      const s = await resolveStart(windowed, "t.c", req);
      expect(s.lastSent, req.kind).toBe(from - 1);
      expect(s.report?.truncated, req.kind).toBe(true);
    }
    const last = await resolveStart(windowed, "t.c", { kind: "last", last: 100 });
    expect(last).toMatchObject({ lastSent: from - 1, report: { truncated: true } });
  });

  it("resume — a start inside the window, live and last values are untouched", async () => {
    const inside = await resolveStart(windowed, "t.c", { kind: "after", after: from, epoch: "E" });
    expect(inside.lastSent).toBe(from);
    expect(inside.report?.truncated).toBeUndefined();
    expect((await resolveStart(windowed, "t.c", { kind: "last", last: 1 })).report?.truncated).toBeUndefined();
    expect(await resolveStart(windowed, "t.c", { kind: "live" })).toEqual({});
    const lv = await resolveStart({ ...windowed, lastPerSubject: async () => ({ messages: [], more: false }) } as unknown as ReplayApi, "t.>", {
      kind: "lastPerSubject",
    });
    expect(lv).toMatchObject({ lastSent: TABLE_LAST });
    expect(lv.report?.truncated).toBeUndefined();
  });
});
