// A catch-up's pages as coalesced frames (PROTOCOL.md "Coalesced frames"), in process: a socket that reads
// coalesced frames gets each page in runs bounded like the live frame window's frames, every message once and in
// order whatever the resume position, the backpressure or the codec; a whole run's frame is built once per
// page and codec and shared by every socket; a socket that did not opt in (or a delta subscription's) gets one
// frame per message as before.
import { decode } from "@msgpack/msgpack";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CatchUp, type CatchUpEnd } from "../../src/fanout/catchup.js";
import { runEnds } from "../../src/fanout/coalesced-frames.js";
import { FramePage, ReplayCache } from "../../src/fanout/replay-cache.js";
import type { FanoutSocket } from "../../src/fanout/socket.js";
import { createLogger } from "../../src/log.js";
import type { Codec } from "../../src/protocol/codec.js";
import { JSON_CODEC, MSGPACK_CODEC } from "../../src/protocol/codecs.js";
import type { StoredMsg } from "../../src/protocol/server-frames.js";
import { FakeFeed } from "#testkit/fake-feed.js";
import { MemoryReplay } from "#testkit/memory-replay.js";

const log = createLogger("silent", {});

/** The `msg` frames one WebSocket frame holds, as values (a JSON text split at `}` LF `{`; a msgpack array). */
function msgsOf(codec: Codec, frame: Uint8Array | string): { op: string; seq: number }[] {
  if (codec.binary) {
    const v = decode(frame as Uint8Array) as { op: string; seq: number } | { op: string; seq: number }[];
    return Array.isArray(v) ? v : [v];
  }
  const text = typeof frame === "string" ? frame : Buffer.from(frame).toString("utf8");
  return text.split("}\n{").map((part, i, all) => JSON.parse(`${i > 0 ? "{" : ""}${part}${i < all.length - 1 ? "}" : ""}`) as { op: string; seq: number });
}

/** A socket that records its frames; `room` bytes are taken before it reports backpressure (then drains on demand). */
class RecordingSocket implements FanoutSocket {
  closed = false;
  frames: (Uint8Array | string)[] = [];
  seqs: number[] = [];
  /** The seq the socket was told for each `msg` frame (the last message's). */
  told: (number | undefined)[] = [];
  private buffered = 0;
  private drainers: (() => void)[] = [];
  constructor(
    readonly codec: Codec,
    readonly coalesce: boolean,
    private readonly room = Infinity,
  ) {}
  send(frame: Uint8Array | string, seq?: number): number {
    const msgs = msgsOf(this.codec, frame).filter((m) => m.op === "msg");
    if (msgs.length > 0) {
      this.frames.push(frame);
      this.told.push(seq);
      this.seqs.push(...msgs.map((m) => m.seq));
    }
    this.buffered += typeof frame === "string" ? frame.length : frame.length;
    return 1;
  }
  cork(fn: () => void): void {
    fn();
  }
  bufferedAmount(): number {
    return this.buffered > this.room ? this.buffered : 0;
  }
  joinTopic(): void {}
  onDrained(fn: () => void): void {
    this.drainers.push(fn);
    queueMicrotask(() => {
      this.buffered = 0;
      for (const d of this.drainers.splice(0)) d();
    });
  }
}

function catchUp(cache: ReplayCache, sock: RecordingSocket, pattern: string, from: number, position: number): Promise<CatchUpEnd> {
  return new Promise((resolve) => {
    const c = new CatchUp(sock, pattern, new FakeFeed(pattern, position), cache, { holdLimit: 1_000, backpressureBytes: 4 * 1_024 }, log, from - 1, resolve);
    c.start();
  });
}

const stored = (n: number, size = 10): StoredMsg[] =>
  Array.from({ length: n }, (_, i) => ({ channel: "c", seq: i + 1, ts: i + 1, payload: Buffer.from(JSON.stringify({ i: i + 1, pad: "x".repeat(size) })) }));

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("catch-up — coalesced pages", () => {
  it("catch-up — runs close before the frame that would pass the bound; a frame at the bound goes alone", () => {
    const f = (n: number) => new Uint8Array(n);
    expect(runEnds([f(9), f(9), f(9), f(9)], 20)).toEqual([2, 4]);
    expect(runEnds([f(3), f(30), f(3), f(3)], 20)).toEqual([1, 2, 4]);
    expect(runEnds([f(30)], 20)).toEqual([1]);
    expect(runEnds([], 20)).toEqual([]);
  });

  it("catch-up — a page's whole runs are built once per codec and shared; a part of a run is joined for its caller; each part is the message's own frame", () => {
    for (const codec of [JSON_CODEC, MSGPACK_CODEC]) {
      let grown = 0;
      const page = new FramePage("c", 1, 40, stored(40), (_p, n) => (grown += n), 400);
      const single = page.framesOf(codec);
      const first = page.coalesced(codec, 0, 40);
      expect(first.end).toBeGreaterThan(1);
      expect(first.end).toBeLessThan(40);
      expect(first.frame.length).toBeLessThanOrEqual(400);
      expect(page.coalesced(codec, 0, 40).frame).toBe(first.frame);
      const before = grown;
      expect(page.coalesced(codec, 0, 40).frame).toBe(first.frame);
      expect(grown).toBe(before);
      expect(msgsOf(codec, first.frame).map((m) => m.seq)).toEqual(range(1, first.end));
      if (!codec.binary)
        expect(Buffer.from(first.frame).toString()).toBe(
          single
            .slice(0, first.end)
            .map((x) => Buffer.from(x).toString())
            .join("\n"),
        );
      const part = page.coalesced(codec, 1, 40);
      expect(part.end).toBe(first.end);
      expect(part.frame).not.toBe(page.coalesced(codec, 1, 40).frame);
      expect(msgsOf(codec, part.frame).map((m) => m.seq)).toEqual(range(2, first.end));
      expect(page.coalesced(codec, 0, 2)).toEqual({ frame: expect.anything(), end: 2 });
      expect(page.coalesced(codec, first.end - 1, 40)).toEqual({ frame: single[first.end - 1], end: first.end });
    }
  });

  it("catch-up — a socket that reads coalesced frames gets a resume in fewer frames than messages, in order, each frame told its last seq; two sockets share the runs", async () => {
    for (const codec of [JSON_CODEC, MSGPACK_CODEC]) {
      const r = new MemoryReplay(100);
      for (let i = 0; i < 300; i++) r.append("busy");
      const cache = new ReplayCache(r, 64 << 20, undefined, 512);
      const a = new RecordingSocket(codec, true);
      const b = new RecordingSocket(codec, true);
      const plain = new RecordingSocket(codec, false);
      const ends = await Promise.all([catchUp(cache, a, "busy", 1, 300), catchUp(cache, b, "busy", 1, 300), catchUp(cache, plain, "busy", 1, 300)]);
      expect(ends.map((e) => e.type)).toEqual(["joined", "joined", "joined"]);
      for (const s of [a, b, plain]) expect(s.seqs).toEqual(range(1, 300));
      expect(a.frames.length).toBeLessThan(100);
      expect(a.told).toEqual(a.frames.map((f) => msgsOf(codec, f).at(-1)?.seq));
      for (const f of a.frames) expect(typeof f === "string" ? f.length : f.length).toBeLessThanOrEqual(512);
      expect(b.frames.filter((f, i) => f === a.frames[i]).length).toBeGreaterThan(a.frames.length - 6);
      expect(plain.frames).toHaveLength(300);
    }
  });

  it("catch-up — any resume position, feed position, backpressure and page length: every message up to the feed's once, in order", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 120 }),
        fc.integer({ min: 1, max: 150 }),
        fc.integer({ min: 5, max: 60 }),
        fc.integer({ min: 60, max: 2_000 }),
        fc.integer({ min: 0, max: 3_000 }),
        fc.boolean(),
        fc.integer({ min: 0, max: 40 }),
        async (total, from0, pageSize, maxBytes, room, msgpack, ahead) => {
          const from = Math.min(from0, total + 1);
          // The stream holds `ahead` messages the feed has not delivered yet: those are the feed's to send.
          const position = Math.max(from - 1, total - ahead);
          const r = new MemoryReplay(pageSize);
          for (let i = 0; i < total; i++) r.append(i % 3 === 0 ? "c.a" : "c.b");
          const cache = new ReplayCache(r, 64 << 20, undefined, maxBytes);
          const codec = msgpack ? MSGPACK_CODEC : JSON_CODEC;
          const sock = new RecordingSocket(codec, true, room);
          const end = await catchUp(cache, sock, "c.*", from, position);
          expect(end.type).toBe("joined");
          expect(sock.seqs).toEqual(range(from, position));
        },
      ),
      { numRuns: 150 },
    );
  });
});
