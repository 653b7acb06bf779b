// One table of start positions for every door: the resume path in process (unit/resume.test.ts) and the
// WebSocket and SSE doors of a real gateway (resume-doors.test.ts) are held to the same rows.
//
// The stream of the table: one channel with ten messages, seqs 1..10 (relative to the stream's start), the
// first five removed (retention, or a purge): firstSeq 6, lastSeq 10, epoch E. Each row is asked from
// there; `delivered` is what the receiver must get from the store before the next live message.

/** A start as a door's client asks it, with seqs relative to the table's stream. */
export type CaseStart =
  | { kind: "live" }
  | { kind: "all" }
  | { kind: "last"; last: number }
  | { kind: "timeBefore" }
  /** A resume after `after`; `epoch`: "same", "other", or none given. */
  | { kind: "after"; after: number; epoch?: "same" | "other" };

export type StartCase = {
  name: string;
  start: CaseStart;
  /** Delivery follows this seq (undefined: live from the feed's position). */
  lastSent?: number;
  truncated?: boolean;
  epochChanged?: boolean;
  /** Stored messages delivered before live ones, in order. */
  delivered: number[];
};

export const TABLE_FIRST = 6;
export const TABLE_LAST = 10;
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);

export const START_CASES: StartCase[] = [
  { name: "live: nothing stored, then live", start: { kind: "live" }, delivered: [] },
  { name: "all: everything the stream holds", start: { kind: "all" }, lastSent: 0, delivered: range(6, 10) },
  { name: "last 3", start: { kind: "last", last: 3 }, lastSent: 7, delivered: range(8, 10) },
  { name: "time before every message", start: { kind: "timeBefore" }, lastSent: 5, delivered: range(6, 10) },
  { name: "resume inside the stream, same epoch", start: { kind: "after", after: 7, epoch: "same" }, lastSent: 7, delivered: range(8, 10) },
  { name: "resume inside the stream, no epoch given", start: { kind: "after", after: 7 }, lastSent: 7, delivered: range(8, 10) },
  { name: "resume at the stream's end", start: { kind: "after", after: 10, epoch: "same" }, lastSent: 10, delivered: [] },
  { name: "resume right before the first stored message", start: { kind: "after", after: 5, epoch: "same" }, lastSent: 5, delivered: range(6, 10) },
  {
    name: "resume into removed messages: truncated, from the first stored",
    start: { kind: "after", after: 2, epoch: "same" },
    lastSent: 5,
    truncated: true,
    delivered: range(6, 10),
  },
  {
    name: "resume in another epoch: truncated and epochChanged, from the first stored",
    start: { kind: "after", after: 8, epoch: "other" },
    lastSent: 5,
    truncated: true,
    epochChanged: true,
    delivered: range(6, 10),
  },
  {
    name: "resume past the stream's end: taken as its end, nothing later skipped",
    start: { kind: "after", after: 50, epoch: "same" },
    lastSent: 10,
    delivered: [],
  },
];
