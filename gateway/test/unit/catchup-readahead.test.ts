// The catch-up's reading ahead, in process: the next page is asked for as soon as the current one's end is
// known, and on a dense stretch (one busy channel) the page after it too, on a guess. A guess never costs a
// message: whatever the stream looks like, the socket gets every message once, in order. A read the broker
// fails is read again for at most CATCHUP_RETRY_FOR's worth of backoff, then the catch-up fails.
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { CatchUp, type CatchUpEnd } from "../../src/fanout/catchup.js";
import { ReplayCache } from "../../src/fanout/replay-cache.js";
import type { FanoutSocket } from "../../src/fanout/socket.js";
import { JSON_CODEC } from "../../src/protocol/codecs.js";
import { createLogger } from "../../src/log.js";
import { MemoryReplay } from "#testkit/memory-replay.js";
import { FakeFeed } from "#testkit/fake-feed.js";

const log = createLogger("silent", {});

/** A socket that takes everything at once and records the seqs of the frames it was sent. */
class RecordingSocket implements FanoutSocket {
  readonly codec = JSON_CODEC;
  closed = false;
  seqs: number[] = [];
  joined: string[] = [];
  send(frame: Uint8Array | string): number {
    const f = JSON.parse(typeof frame === "string" ? frame : Buffer.from(frame).toString("utf8")) as { op: string; seq: number };
    if (f.op === "msg") this.seqs.push(f.seq);
    return 1;
  }
  cork(fn: () => void): void {
    fn();
  }
  bufferedAmount(): number {
    return 0;
  }
  joinTopic(topic: string): void {
    this.joined.push(topic);
  }
  onDrained(fn: () => void): void {
    fn();
  }
}

const feedOf = (pattern: string, position: number) => new FakeFeed(pattern, position);

function catchUp(r: MemoryReplay, pattern: string, from: number, retryForMs?: number): Promise<{ sock: RecordingSocket; end: CatchUpEnd }> {
  const sock = new RecordingSocket();
  const cache = new ReplayCache(r, 64 << 20);
  return new Promise((resolve) => {
    const c = new CatchUp(
      sock,
      pattern,
      feedOf(pattern, r.msgs.length),
      cache,
      { holdLimit: 1_000, backpressureBytes: 1 << 20, retryForMs },
      log,
      from - 1,
      (end) => resolve({ sock, end }),
    );
    c.start();
  });
}

describe("catch-up — reading ahead", () => {
  it("catch-up — on one busy channel the page after next is asked for with the next: two reads always wait at the server, none is repeated", async () => {
    const r = new MemoryReplay(100);
    for (let i = 0; i < 1_000; i++) r.append("busy");
    let reading = 0;
    let most = 0;
    const read = r.read.bind(r);
    r.read = async (...a) => {
      most = Math.max(most, ++reading);
      try {
        return await read(...a);
      } finally {
        reading--;
      }
    };
    const { sock, end } = await catchUp(r, "busy", 1);
    expect(most).toBe(2);
    expect(end.type).toBe("joined");
    expect(sock.seqs).toEqual(Array.from({ length: 1_000 }, (_, i) => i + 1));
    const froms = r.reads.map((x) => x.from);
    expect(new Set(froms).size).toBe(froms.length);
    // 1, then 101 and 201 together (the guess), then 301 with 201's end, …: 301 was asked for before 201's page came.
    expect(froms.slice(0, 3)).toEqual([1, 101, 201]);
    expect(froms).toHaveLength(10);
  });

  it("catch-up — a wrong guess (the channel thins out after the first page) costs reads, never a message", async () => {
    const r = new MemoryReplay(100);
    for (let i = 0; i < 100; i++) r.append("thin");
    for (let i = 0; i < 600; i++) r.append(i % 3 === 0 ? "thin" : "other");
    const { sock } = await catchUp(r, "thin", 1);
    expect(sock.seqs).toEqual(r.msgs.filter((m) => m.channel === "thin").map((m) => m.seq));
  });

  it("catch-up — property: any mix of channels, page size and start, every message of the pattern once, in order", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.boolean(), { minLength: 1, maxLength: 400 }),
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 1, max: 400 }),
        async (mine, pageSize, start) => {
          const r = new MemoryReplay(pageSize);
          for (const m of mine) r.append(m ? "x" : "y");
          const from = Math.min(start, r.msgs.length);
          const { sock, end } = await catchUp(r, "x", from);
          expect(end.type).toBe("joined");
          expect(sock.seqs).toEqual(r.msgs.filter((m) => m.channel === "x" && m.seq >= from).map((m) => m.seq));
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("catch-up — failed reads", () => {
  /** A stream of 10 messages whose first `failing` reads are refused; the times of every read. */
  function refusing(failing: number): { r: MemoryReplay; at: number[]; refusal: Error } {
    const r = new MemoryReplay(100);
    for (let i = 0; i < 10; i++) r.append("ch");
    const read = r.read.bind(r);
    const at: number[] = [];
    const refusal = new Error("no responders");
    r.read = async (...a) => {
      at.push(Date.now());
      if (at.length <= failing) throw refusal;
      return read(...a);
    };
    return { r, at, refusal };
  }

  it("catch-up — a read the broker fails is read again after 250 ms, then 500 ms, while the waits fit CATCHUP_RETRY_FOR; then the catch-up fails with its error", async () => {
    const { r, at, refusal } = refusing(Infinity);
    const { sock, end } = await catchUp(r, "ch", 1, 1_000);
    expect(end).toEqual({ type: "failed", lastSent: 0, error: refusal });
    expect(sock.seqs).toEqual([]);
    // 250 + 500 fit in 1 s, a third wait (1 s more) would not.
    expect(at).toHaveLength(3);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(240);
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(490);
  });

  it("catch-up — CATCHUP_RETRY_FOR 0 fails at the first refusal; a read that succeeds on a retry delivers every message once", async () => {
    const none = refusing(Infinity);
    expect((await catchUp(none.r, "ch", 1, 0)).end.type).toBe("failed");
    expect(none.at).toHaveLength(1);
    const once = refusing(1);
    const { sock, end } = await catchUp(once.r, "ch", 1, 1_000);
    expect(end.type).toBe("joined");
    expect(sock.seqs).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
  });
});
