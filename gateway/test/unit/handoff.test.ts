import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { Handoff, type HandoffEnd, type HandoffItem, type HandoffPage, type HandoffPort, type WriteResult } from "../../src/fanout/handoff.js";
import { SubjectSequencer } from "../../src/broker/jetstream/sequencer.js";
import { SharedQuery } from "../../src/util/shared-query.js";

/** A memory stream of one pattern: seqs of matching messages (other channels' seqs are skipped). */
class MemoryStream {
  seqs: number[] = [];
  last = 0;
  append(matching = true): number {
    this.last++;
    if (matching) this.seqs.push(this.last);
    return this.last;
  }
  /** A page from `from`: at most `size` matching messages, covering to the target when it reaches the end. */
  page(from: number, target: number, size: number): HandoffPage<string> {
    const items = this.seqs
      .filter((s) => s >= from)
      .slice(0, size)
      .map((seq) => ({ seq, frame: `m${seq}` }));
    const rest = this.seqs.filter((s) => s >= from).length - items.length;
    const lastItem = items.at(-1)?.seq ?? from - 1;
    return { from, coverEnd: rest > 0 ? lastItem : Math.max(lastItem, target), items };
  }
}

/** A fake socket: records frames, can be full (until drained) or refuse a frame (over the hard cap). */
class FakeSocket implements HandoffPort<string> {
  out: string[] = [];
  joined = false;
  ended?: HandoffEnd;
  fetches: { from: number; target: number }[] = [];
  capacity = Infinity;
  refuseAt = Infinity;
  drainWaiting = false;
  h!: Handoff<string>;
  fetch(from: number, target: number): void {
    this.fetches.push({ from, target });
  }
  private send(frame: string): boolean {
    if (this.out.length + 1 >= this.refuseAt) return false;
    this.out.push(frame);
    return true;
  }
  write(items: readonly HandoffItem<string>[], start: number): WriteResult {
    let n = 0;
    for (let i = start; i < items.length; i++) {
      if (this.capacity <= 0) return { n, stop: "full" };
      if (!this.send(items[i]!.frame)) return { n, stop: "dropped" };
      this.capacity--;
      n++;
    }
    return { n };
  }
  waitDrain(): void {
    this.drainWaiting = true;
  }
  drain(capacity = Infinity): void {
    this.capacity = capacity;
    this.drainWaiting = false;
    this.h.resume();
  }
  join(held: readonly HandoffItem<string>[]): WriteResult {
    let n = 0;
    for (const item of held) {
      if (!this.send(item.frame)) return { n, stop: "dropped" };
      n++;
    }
    this.joined = true;
    return { n };
  }
  end(e: HandoffEnd): void {
    this.ended = e;
  }
  seqs(): number[] {
    return this.out.map((f) => Number(f.slice(1)));
  }
}

function setup(stream: MemoryStream, lastSent: number, holdLimit = 100) {
  const sock = new FakeSocket();
  const h = new Handoff<string>(sock, lastSent, stream.last, holdLimit);
  sock.h = h;
  return { sock, h };
}

/** Answers the pending fetch from the stream. */
function answer(stream: MemoryStream, sock: FakeSocket, h: Handoff<string>, size = 3): void {
  const f = sock.fetches.shift()!;
  h.page(f.from, stream.page(f.from, f.target, size));
}

describe("handoff — pure state machine", () => {
  it("handoff — nothing to replay (client already at the feed's position): joins at once, no fetch", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 5; i++) s.append();
    const { sock, h } = setup(s, 5);
    h.start();
    expect(sock.fetches).toEqual([]);
    expect(sock.joined).toBe(true);
    expect(sock.ended).toMatchObject({ type: "joined", lastSent: 5 });
  });

  it("handoff — replays pages, holds live messages, joins with no gap and no duplicate", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 10; i++) s.append(i % 3 !== 0);
    const { sock, h } = setup(s, 0);
    h.start();
    // Live messages arrive while the first page is in flight (after the target: they are held).
    const l1 = s.append();
    h.live(l1, `m${l1}`);
    answer(s, sock, h);
    const l2 = s.append(false);
    const l3 = s.append();
    h.live(l3, `m${l3}`);
    while (sock.fetches.length > 0) answer(s, sock, h);
    expect(sock.joined).toBe(true);
    expect(sock.seqs()).toEqual(s.seqs);
    expect(l2).toBeGreaterThan(0);
    expect(sock.ended).toMatchObject({ type: "joined", lastSent: l3 });
  });

  it("handoff — join before the first replayed message: a live message that the pages also hold is sent once", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 4; i++) s.append();
    const { sock, h } = setup(s, 0);
    h.start();
    // The page is read after two more messages were stored: it holds them, and they are also held live.
    const a = s.append();
    const b = s.append();
    h.live(a, `m${a}`);
    h.live(b, `m${b}`);
    answer(s, sock, h, 100);
    expect(sock.joined).toBe(true);
    expect(sock.seqs()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("handoff — socket full: pauses mid-page, resumes on drain where it stopped", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 9; i++) s.append();
    const { sock, h } = setup(s, 0);
    sock.capacity = 2;
    h.start();
    answer(s, sock, h, 5);
    expect(h.state).toBe("draining");
    expect(sock.seqs()).toEqual([1, 2]);
    sock.drain(2);
    expect(sock.seqs()).toEqual([1, 2, 3, 4]);
    sock.drain();
    while (sock.fetches.length > 0) answer(s, sock, h, 5);
    expect(sock.seqs()).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(sock.joined).toBe(true);
    expect(h.throttles).toBe(2);
  });

  it("handoff — cancel mid-replay: the answer of the fetch in flight is ignored, nothing more is written", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 9; i++) s.append();
    const { sock, h } = setup(s, 0);
    h.start();
    answer(s, sock, h);
    h.cancel();
    answer(s, sock, h);
    h.live(s.append(), "late");
    expect(sock.seqs()).toEqual([1, 2, 3]);
    expect(sock.joined).toBe(false);
    expect(sock.ended).toBeUndefined();
    expect(h.state).toBe("cancelled");
  });

  it("handoff — suspended by the owner (slow socket) mid-replay: ends with the last seq written", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 9; i++) s.append();
    const { sock, h } = setup(s, 0);
    h.start();
    answer(s, sock, h);
    h.suspend();
    expect(sock.ended).toEqual({ type: "suspended", lastSent: 3 });
    answer(s, sock, h);
    expect(sock.seqs()).toEqual([1, 2, 3]);
  });

  it("handoff — a refused frame suspends after the last frame the socket took", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 9; i++) s.append();
    const { sock, h } = setup(s, 0);
    sock.refuseAt = 5;
    h.start();
    answer(s, sock, h, 10);
    expect(sock.ended).toEqual({ type: "suspended", lastSent: 4 });
  });

  it("handoff — the hold overflows: dropped, the target moves on, the pages deliver them instead", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 3; i++) s.append();
    const { sock, h } = setup(s, 0, 2);
    h.start();
    for (let i = 0; i < 5; i++) {
      const seq = s.append();
      h.live(seq, `m${seq}`);
    }
    expect(h.target).toBeGreaterThan(3);
    while (sock.fetches.length > 0) answer(s, sock, h, 2);
    const more = s.append();
    h.live(more, `m${more}`); // after join: the topic delivers it, not the machine
    expect(sock.seqs()).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(sock.joined).toBe(true);
  });

  it("handoff — the hold is bounded in bytes too: over it while a page is read, dropped and re-read like the count", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 3; i++) s.append();
    const sock = new FakeSocket();
    const h = new Handoff<string>(sock, 0, s.last, 1_000, { holdBytes: 10, sizeOf: (f) => f.length, slowError: () => new Error("slow") });
    sock.h = h;
    h.start();
    for (let i = 0; i < 5; i++) {
      const seq = s.append();
      h.live(seq, `m${seq}`); // 2 bytes each: the sixth would pass 10
      expect(h.heldSize).toBeLessThanOrEqual(10);
    }
    const big = s.append();
    h.live(big, `m${big}`.padEnd(11, "x")); // alone over the bound
    expect(h.heldCount).toBe(0);
    expect(h.target).toBe(big);
    while (sock.fetches.length > 0) answer(s, sock, h, 2);
    expect(sock.seqs()).toEqual(s.seqs);
    expect(sock.ended).toMatchObject({ type: "joined", lastSent: big });
  });

  it("handoff — the hold overflows while waiting for a slow socket: fails with the slow error at the last seq written, holding nothing", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 10; i++) s.append();
    const sock = new FakeSocket();
    const slow = new Error("slow");
    const h = new Handoff<string>(sock, 0, s.last, 3, { holdBytes: 1_000, sizeOf: (f) => f.length, slowError: () => slow });
    sock.h = h;
    sock.capacity = 4;
    h.start();
    answer(s, sock, h, 10);
    expect(h.state).toBe("draining");
    for (let i = 0; i < 4; i++) {
      const seq = s.append();
      h.live(seq, `m${seq}`);
    }
    expect(sock.ended).toEqual({ type: "failed", lastSent: 4, error: slow });
    expect(h.heldCount).toBe(0);
    expect(sock.seqs()).toEqual([1, 2, 3, 4]);
    sock.drain(); // late drain: nothing more is written
    expect(sock.seqs()).toEqual([1, 2, 3, 4]);
  });

  it("handoff — expire (the driver's deadline) fails it at the last seq written; later pages and drains are ignored", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 10; i++) s.append();
    const { sock, h } = setup(s, 0);
    h.start();
    answer(s, sock, h, 3);
    const late = new Error("deadline");
    h.expire(late);
    expect(sock.ended).toEqual({ type: "failed", lastSent: 3, error: late });
    answer(s, sock, h, 3);
    expect(sock.seqs()).toEqual([1, 2, 3]);
    h.expire(new Error("twice"));
    expect(sock.ended).toEqual({ type: "failed", lastSent: 3, error: late });
  });

  it("handoff — a repaired live message older than the target is left to the pages (gap during catch-up)", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 6; i++) s.append();
    const { sock, h } = setup(s, 0);
    h.start();
    h.live(4, "m4"); // the feed repaired 4 late: the pages cover it
    answer(s, sock, h, 100);
    expect(sock.seqs()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("handoff — a failed fetch ends it as failed with the last seq written", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 6; i++) s.append();
    const { sock, h } = setup(s, 0);
    h.start();
    answer(s, sock, h);
    const f = sock.fetches.shift()!;
    h.fetchFailed(f.from, new Error("down"));
    expect(sock.ended).toMatchObject({ type: "failed", lastSent: 3 });
  });

  it("handoff — any interleaving of live messages, page sizes and drains: every message once, in order", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("store", "other", "live", "page", "drain"), { maxLength: 80 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 0, max: 20 }),
        fc.integer({ min: 1, max: 8 }),
        (ops, size, initial, holdLimit) => {
          const s = new MemoryStream();
          for (let i = 0; i < initial; i++) s.append(i % 2 === 0);
          const { sock, h } = setup(s, 0, holdLimit);
          sock.capacity = 3;
          h.start();
          let delivered = s.last; // the feed has delivered (to the machine) everything up to here
          const feedLive = () => {
            for (const seq of s.seqs.filter((x) => x > delivered)) {
              if (h.state === "joined")
                sock.out.push(`m${seq}`); // the topic delivers it
              else h.live(seq, `m${seq}`);
            }
            delivered = s.last;
          };
          for (const op of ops) {
            if (op === "store") s.append();
            else if (op === "other") s.append(false);
            else if (op === "live") feedLive();
            else if (op === "page" && sock.fetches.length > 0) answer(s, sock, h, size);
            else if (op === "drain" && sock.drainWaiting) sock.drain(3);
          }
          // Settle: deliver live, answer every fetch, drain.
          for (let i = 0; i < 1_000 && !h.done; i++) {
            feedLive();
            if (sock.fetches.length > 0) answer(s, sock, h, size);
            else if (sock.drainWaiting) sock.drain(3);
          }
          expect(h.state).toBe("joined");
          feedLive();
          expect(sock.seqs()).toEqual(s.seqs);
        },
      ),
      { numRuns: 500 },
    );
  });
});

/** A machine whose feed lags the stream: it has fanned out up to `feedAt`, the client has everything up to `lastSent`. */
function lagging(stream: MemoryStream, lastSent: number, feedAt: number, holdLimit = 100) {
  const sock = new FakeSocket();
  const h = new Handoff<string>(sock, lastSent, feedAt, holdLimit);
  sock.h = h;
  /** The feed fans out `seq`: through the topic once the socket joined it, else to the machine. */
  const fanOut = (seq: number) => (sock.joined ? sock.out.push(`m${seq}`) : h.live(seq, `m${seq}`));
  return { sock, h, fanOut };
}

describe("handoff — a client resumed past the feed's position (the feed lags the stream)", () => {
  it("handoff — the feed's messages at or below the client's position are never sent: it joins once the feed passed them", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 10; i++) s.append();
    const { sock, h, fanOut } = lagging(s, 10, 6);
    h.start();
    expect(sock.fetches).toEqual([{ from: 7, target: 10 }]);
    answer(s, sock, h, 100);
    expect(h.state).toBe("trailing");
    for (const seq of [7, 8, 9]) fanOut(seq);
    expect(sock.joined).toBe(false);
    fanOut(10);
    expect(sock.ended).toMatchObject({ type: "joined", lastSent: 10, covered: 10, held: [] });
    for (let i = 0; i < 3; i++) fanOut(s.append());
    expect(sock.seqs()).toEqual([11, 12, 13]);
  });

  it("handoff — nothing of the pattern stored between the feed and the position: joins after one page, before any live message", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 6; i++) s.append();
    for (let i = 0; i < 4; i++) s.append(false);
    const { sock, h } = lagging(s, 10, 6);
    h.start();
    answer(s, sock, h, 100);
    expect(sock.ended).toMatchObject({ type: "joined", lastSent: 10 });
    expect(sock.out).toEqual([]);
  });

  it("handoff — the feed owes only some seqs up to the position (other channels between): it waits for the newest of them", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 6; i++) s.append();
    s.append(false);
    s.append(); // 8: the newest the feed owes
    s.append(false);
    s.append(false);
    const { sock, h, fanOut } = lagging(s, 10, 6);
    h.start();
    answer(s, sock, h, 100);
    expect(h.state).toBe("trailing");
    const next = s.append();
    fanOut(8);
    expect(sock.ended).toMatchObject({ type: "joined", lastSent: 10 });
    fanOut(next);
    expect(sock.seqs()).toEqual([next]);
  });

  it("handoff — live messages after the position arrive while the pages are read: held and written at the join, none skipped", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 10; i++) s.append();
    const { sock, h, fanOut } = lagging(s, 10, 6);
    h.start();
    for (const seq of [7, 8, 9, 10]) fanOut(seq);
    const a = s.append();
    const b = s.append();
    fanOut(a);
    fanOut(b);
    answer(s, sock, h, 100);
    expect(sock.ended).toMatchObject({ type: "joined", lastSent: b, covered: 10, held: [a, b] });
    expect(sock.seqs()).toEqual([a, b]);
  });

  it("handoff — the hold overflows while the pages up to the position are read: those after it are read from the stream, none skipped", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 10; i++) s.append();
    const { sock, h, fanOut } = lagging(s, 10, 6, 0);
    h.start();
    for (const seq of [7, 8, 9, 10]) fanOut(seq);
    const a = s.append();
    fanOut(a); // over a hold of 0: dropped, the target moves to it
    expect(h.target).toBe(a);
    answer(s, sock, h, 100);
    expect(sock.fetches).toEqual([{ from: 11, target: a }]);
    answer(s, sock, h, 100);
    expect(sock.ended).toMatchObject({ type: "joined", lastSent: a });
    fanOut(s.append());
    expect(sock.seqs()).toEqual([11, 12]);
  });

  it("handoff — a failed page of the probe ends it as failed at the position", () => {
    const s = new MemoryStream();
    for (let i = 0; i < 10; i++) s.append();
    const { sock, h } = lagging(s, 10, 6);
    h.start();
    const f = sock.fetches.shift()!;
    h.fetchFailed(f.from, new Error("down"));
    expect(sock.ended).toMatchObject({ type: "failed", lastSent: 10 });
  });

  it("handoff — any position, any lag of the feed, any interleaving: every message after the position once, in order", () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom("store", "other", "live", "page", "drain"), { maxLength: 60 }),
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.boolean(), { minLength: 1, maxLength: 20 }),
        fc.nat(),
        fc.nat(),
        fc.integer({ min: 0, max: 6 }),
        (ops, size, initial, at, lag, holdLimit) => {
          const s = new MemoryStream();
          for (const m of initial) s.append(m);
          const lastSent = at % (s.last + 1);
          let delivered = s.last - (lag % (s.last + 1)); // the feed has fanned out up to here
          const { sock, h } = lagging(s, lastSent, delivered, holdLimit);
          sock.capacity = 3;
          h.start();
          const feedLive = (upTo: number) => {
            for (const seq of s.seqs.filter((x) => x > delivered && x <= upTo)) {
              if (sock.joined) sock.out.push(`m${seq}`);
              else h.live(seq, `m${seq}`);
            }
            delivered = Math.max(delivered, upTo);
          };
          for (const op of ops) {
            if (op === "store") s.append();
            else if (op === "other") s.append(false);
            else if (op === "live") feedLive(Math.min(s.last, delivered + 2));
            else if (op === "page" && sock.fetches.length > 0) answer(s, sock, h, size);
            else if (op === "drain" && sock.drainWaiting) sock.drain(3);
          }
          for (let i = 0; i < 1_000 && !h.done; i++) {
            if (sock.fetches.length > 0) answer(s, sock, h, size);
            else if (sock.drainWaiting) sock.drain(3);
            else feedLive(Math.min(s.last, delivered + 1));
          }
          expect(h.state).toBe("joined");
          feedLive(s.last);
          expect(sock.seqs()).toEqual(s.seqs.filter((x) => x > lastSent));
        },
      ),
      { numRuns: 1_000 },
    );
  });
});

describe("live sequencer — gaps and duplicates per subject", () => {
  it("live sequencer — in order delivers; a missed predecessor is a gap from the last delivered + 1; repeats are old", () => {
    const q = new SubjectSequencer(10);
    expect(q.check("a", 5, 0)).toEqual({ type: "old" }); // predates the feed
    expect(q.check("a", 11, 3)).toEqual({ type: "deliver" }); // predecessor predates the feed
    q.record("a", 11);
    expect(q.check("a", 11, 3)).toEqual({ type: "old" });
    expect(q.check("a", 14, 12)).toEqual({ type: "gap", subject: "a", from: 12 });
    expect(q.check("b", 15, 13)).toEqual({ type: "gap", subject: "b", from: 11 });
    expect(q.check("a", 14, 11)).toEqual({ type: "deliver" });
    // Retention removed the last delivered message: its successor names an older one — not a gap.
    expect(q.check("a", 20, 7)).toEqual({ type: "deliver" });
    expect(q.fresh("a", 11)).toBe(false);
    expect(q.fresh("a", 12)).toBe(true);
  });

  it("live sequencer — bounded: forgetting a subject raises the baseline so nothing is delivered twice", () => {
    const q = new SubjectSequencer(0, 2);
    q.record("a", 1);
    q.record("b", 2);
    q.record("c", 3);
    expect(q.tracked).toBe(2);
    expect(q.baseline).toBe(1);
    expect(q.check("a", 1, 0)).toEqual({ type: "old" });
    q.reset(100);
    expect(q.check("c", 50, 0)).toEqual({ type: "old" });
  });
});

describe("shared query — stream state requests", () => {
  it("shared query — concurrent callers share a request sent after they called: at most one in flight and one queued", async () => {
    let calls = 0;
    let release: (() => void)[] = [];
    const c = new SharedQuery(
      () =>
        new Promise<number>((r) => {
          const n = ++calls;
          release.push(() => r(n));
        }),
    );
    const a = c.get();
    const b = c.get();
    const d = c.get();
    expect(calls).toBe(1);
    release.shift()!();
    expect(await a).toBe(1);
    await new Promise((r) => setImmediate(r));
    expect(calls).toBe(2);
    release.shift()!();
    expect(await b).toBe(2);
    expect(await d).toBe(2);
    release = [];
  });
});
