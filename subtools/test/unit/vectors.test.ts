// The shared test vectors (subtools/test/vectors/*.json), which the native engine's Go tests read too
// (subtools/native/vectors_test.go): the frame scan of both TypeScript engines, the sequence tracker, the
// latency statistics and the lean engine's frame reader, held to one table each so the engines cannot drift.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { scanned, scanGatewayFrame } from "../../src/frame.js";
import { bs, scanGatewayBytes } from "../../src/scan-bytes.js";
import { SeqTracker } from "../../src/seq-tracker.js";
import { LatencyStats } from "../../src/shared/mod.js";
import { FrameError, FrameReader, type FrameSink } from "../../src/lean/frame-reader.js";

function vectors<T>(name: string): T[] {
  return (JSON.parse(readFileSync(new URL(`../vectors/${name}.json`, import.meta.url), "utf8")) as { cases: T[] }).cases;
}

type Scan = { sub: string; seq: number; p: string; end: boolean; s: number; t: number; total: number; o: number | null };
type ScanCase = { name: string; frame: string; result: 1 | 0 | -1; expect?: Partial<Scan> };

/** Only the fields the case names: s and t mean nothing on an end marker, total nothing on data. */
function pick(got: Scan, want: Partial<Scan>): Partial<Scan> {
  return Object.fromEntries(Object.keys(want).map((k) => [k, got[k as keyof Scan]]));
}
const offset = (o: number): number | null => (Number.isNaN(o) ? null : o);

describe("vectors — frame scan", () => {
  for (const c of vectors<ScanCase>("scan")) {
    it(`scan (ws engine, string) — ${c.name}`, () => {
      const r = scanGatewayFrame(c.frame);
      expect(r).toBe(c.result);
      if (r !== 1 || !c.expect) return;
      const got: Scan = {
        sub: scanned.sub,
        seq: scanned.gwSeq,
        p: scanned.p,
        end: scanned.end,
        s: scanned.s,
        t: scanned.t,
        total: scanned.total,
        o: offset(scanned.o),
      };
      expect(pick(got, c.expect)).toEqual(c.expect);
    });

    it(`scan (lean engine, bytes) — ${c.name}`, () => {
      // Inside a larger, reused read buffer with older bytes past the frame, as the lean engine reads it.
      const frame = Buffer.from(c.frame, "utf8");
      const buf = Buffer.concat([Buffer.from([0x81, 0x7e, 0, 0]), frame, Buffer.from('"p":"stale","s":1,"t":2}}')]);
      const r = scanGatewayBytes(buf, 4, 4 + frame.length);
      expect(r).toBe(c.result);
      if (r !== 1 || !c.expect) return;
      const sub = bs.subStart >= 0 ? buf.toString("utf8", bs.subStart, bs.subEnd) : (bs.subStr ?? "");
      const p = bs.pStr ?? buf.toString("utf8", bs.pStart, bs.pEnd);
      const got: Scan = { sub, seq: bs.seq, p, end: bs.end, s: bs.s, t: bs.t, total: bs.total, o: offset(bs.o) };
      expect(pick(got, c.expect)).toEqual(c.expect);
    });
  }
});

type SeqCase = { name: string; fromOne: boolean; seqs: (number | { from: number; to: number; step?: number })[]; end?: number; expect: Record<string, number> };

describe("vectors — sequence tracker", () => {
  for (const c of vectors<SeqCase>("seq")) {
    it(`seq-tracker — ${c.name}`, () => {
      const t = new SeqTracker(c.fromOne);
      for (const x of c.seqs) {
        if (typeof x === "number") t.see(x);
        else for (let s = x.from; s <= x.to; s += x.step ?? 1) t.see(s);
      }
      if (c.end !== undefined) t.end(c.end);
      const got: Record<string, number> = {
        start: t.start,
        distinct: t.distinct,
        duplicates: t.duplicates,
        outOfOrder: t.outOfOrder,
        late: t.late,
        expected: t.expected(),
        lost: t.lost(),
      };
      expect(Object.fromEntries(Object.keys(c.expect).map((k) => [k, got[k]]))).toEqual(c.expect);
    });
  }
});

type StatsCase = {
  name: string;
  samples: number[];
  expect: {
    count: number;
    clamped: number;
    overflow: number;
    min: number | null;
    max: number | null;
    mean: number | null;
    harmonicMean: number | null;
    percentiles: Record<string, number | null>;
  };
};

function close(got: number, want: number | null): void {
  if (want === null) expect(got).toBeNaN();
  else expect(Math.abs(got - want)).toBeLessThanOrEqual(Math.abs(want) * 1e-12);
}

describe("vectors — latency statistics", () => {
  for (const c of vectors<StatsCase>("stats")) {
    it(`stats — ${c.name}`, () => {
      const direct = new LatencyStats();
      for (const v of c.samples) direct.record(v);
      // The same figures after the trip a process's window makes to the master (JSON, encoded histogram).
      const viaJson = LatencyStats.fromJSON(JSON.parse(JSON.stringify(direct.toJSON())));
      for (const s of [direct, viaJson]) {
        const e = c.expect;
        expect([s.count, s.clamped, s.overflow]).toEqual([e.count, e.clamped, e.overflow]);
        expect(s.toJSON().minUs).toBe(e.min);
        expect(s.toJSON().maxUs).toBe(e.max);
        close(s.meanUs, e.mean);
        close(s.harmonicMeanUs, e.harmonicMean);
        for (const [p, want] of Object.entries(e.percentiles)) {
          if (want === null) expect(s.percentileUs(Number(p))).toBeNaN();
          else expect(s.percentileUs(Number(p)), `p${p}`).toBe(want);
        }
      }
    });
  }
});

type Part = { hex?: string; text?: string; fill?: [string, number] };
type WsEvent = { kind: "message" | "control"; op: number } & Part;
type WsCase = { name: string; stream: Part[]; chunkings: number[][]; events: WsEvent[]; error?: number; maxMessage?: number };

function bytesOf(p: Part): Buffer {
  if (p.hex !== undefined) return Buffer.from(p.hex, "hex");
  if (p.text !== undefined) return Buffer.from(p.text, "latin1");
  return Buffer.alloc(p.fill![1], p.fill![0], "latin1");
}

describe("vectors — WebSocket frame reader", () => {
  for (const c of vectors<WsCase>("ws-frames")) {
    it(`frame reader — ${c.name}`, () => {
      const stream = Buffer.concat(c.stream.map(bytesOf));
      const want = c.events.map((e) => ({ kind: e.kind, op: e.op, payload: bytesOf(e).toString("hex") }));
      for (const sizes of c.chunkings) {
        const got: { kind: string; op: number; payload: string }[] = [];
        const sink: FrameSink = {
          message: (op, buf, s, e) => got.push({ kind: "message", op, payload: buf.toString("hex", s, e) }),
          control: (op, buf, s, e) => got.push({ kind: "control", op, payload: buf.toString("hex", s, e) }),
        };
        const reader = new FrameReader(sink, c.maxMessage);
        // Through one reused buffer, overwritten after each read like the connection's.
        const shared = Buffer.alloc(stream.length);
        let error: number | null = null;
        try {
          for (let at = 0, i = 0; at < stream.length; i++) {
            const n = Math.min(sizes.length ? sizes[i % sizes.length]! : stream.length, stream.length - at);
            stream.copy(shared, 0, at, at + n);
            reader.feed(shared, 0, n);
            shared.fill(0xee, 0, n);
            at += n;
          }
        } catch (e) {
          if (!(e instanceof FrameError)) throw e;
          error = e.closeCode;
        }
        expect(got, `chunks ${JSON.stringify(sizes)}`).toEqual(want);
        expect(error).toBe(c.error ?? null);
        if (error === null) expect(reader.pending).toBe(0);
      }
    });
  }
});
