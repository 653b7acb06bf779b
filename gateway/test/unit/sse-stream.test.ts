// SseStream against a fake uWS HttpResponse: what it writes, when it stops writing (uWS loses writes made
// after `write` returned false and before `onWritable`), and how a slow reader leaves and rejoins the feed.
// The feed here has no replay cache (a broker without history), so rejoining is direct; catch-ups with a
// cache are covered by gateway/test/sse.test.ts against real servers.
import { describe, expect, it, vi } from "vitest";
import type { FanoutHub } from "../../src/fanout/hub.js";
import { Resume } from "../../src/fanout/resume.js";
import type { SseLive, SseReceiver } from "../../src/sse/live.js";
import { FakeFeed } from "#testkit/fake-feed.js";
import { MemoryReplay } from "#testkit/memory-replay.js";
import { ReplayCache, type PageSource } from "../../src/fanout/replay-cache.js";
import { msgFrame } from "../../src/protocol/serialize.js";
import { sseEventOf } from "../../src/sse/event.js";
import type { Logger } from "../../src/log.js";
import type { Metrics } from "../../src/metrics/metrics.js";
import { SseStream, type SseEndReason } from "../../src/sse/stream.js";
import type { HttpResponse } from "../../src/uws.js";

class FakeRes {
  written: string[] = [];
  accept = true;
  writable?: (offset: number) => boolean;
  endedWith?: "end" | "close";
  cork(fn: () => void): this {
    fn();
    return this;
  }
  write(chunk: string | Buffer): boolean {
    if (this.endedWith) throw new Error("write after end");
    this.written.push(chunk.toString());
    return this.accept;
  }
  onWritable(h: (offset: number) => boolean): this {
    this.writable = h;
    return this;
  }
  end(): this {
    this.endedWith = "end";
    return this;
  }
  close(): this {
    this.endedWith = "close";
    return this;
  }
}

const counter = () => ({ inc: vi.fn() });

function setup(bp = { bytes: 1_000, maxBytes: 10_000, slowTimeoutMs: 60_000 }, pages?: PageSource) {
  const current = { epoch: "E" };
  const res = new FakeRes();
  const feed = Object.assign(new FakeFeed("p"), { streams: new Set<SseReceiver>() });
  // The live SSE group of the pattern, as a set the test reads (sse/live.ts is tested through real servers).
  const live = {
    join: (_f: unknown, st: SseReceiver) => feed.streams.add(st),
    leave: (_p: string, st: SseReceiver) => feed.streams.delete(st),
  } as unknown as SseLive;
  const metrics = { slowSwitches: counter(), slowClosed: counter(), deliveriesDropped: counter() } as unknown as Metrics;
  const log = { info: vi.fn(), warn: vi.fn(), debug: vi.fn(), isLevelEnabled: () => false } as unknown as Logger;
  const ends: SseEndReason[] = [];
  const s = new SseStream(
    res as unknown as HttpResponse,
    "p",
    "1.2.3.4",
    feed,
    {
      resume: new Resume({ pages } as unknown as FanoutHub, { holdLimit: 100, backpressureBytes: bp.bytes }, log, metrics.deliveriesDropped),
      connected: () => true,
      live,
      config: { backpressure: bp },
      metrics,
      log,
      epoch: () => current.epoch,
      onEnd: (_s, why) => ends.push(why),
    },
    "E",
  );
  return { res, feed, metrics, s, ends, current };
}

const ev = (seq: number, size = 10) => Buffer.from(`id: E:${seq}\ndata: ${"x".repeat(size)}\n\n`);

describe("sse stream — writes and backpressure", () => {
  it("sse stream — joins the feed and writes live events in order, each once", () => {
    const { res, feed, s } = setup();
    s.start(0);
    expect(feed.streams.has(s)).toBe(true);
    s.onEvent(1, ev(1));
    s.onEvent(2, ev(2));
    expect(res.written).toEqual([ev(1).toString(), ev(2).toString()]);
    expect(s.lastSent).toBe(2);
  });

  it("sse stream — a message the live feed repaired late (older than what was sent) is written once, with the position as its id", () => {
    const { res, s } = setup();
    s.start(0);
    s.onEvents([1, 2], [ev(1), ev(2)], Buffer.concat([ev(1), ev(2)]));
    s.onEvent(5, ev(5));
    // The feed found 3 and 4 missing (another channel's next message told it) and delivers them now.
    s.onEvents([4, 6, 3], [ev(4), ev(6), ev(3)], Buffer.concat([ev(4), ev(6), ev(3)]));
    const ids = res.written.flatMap((w) => [...w.matchAll(/id: E:(\d+)\ndata: x+/g)].map((m) => Number(m[1])));
    // 4 goes out as "resume after 5", 6 as itself, 3 as "resume after 6": a reconnect repeats nothing.
    expect(ids).toEqual([1, 2, 5, 5, 6, 6]);
    expect(s.lastSent).toBe(6);
  });

  it("sse stream — a batch is one write; a stream that joined during the batch skips what its catch-up wrote, and a later repair of a message above the pages is written", async () => {
    const stored = new MemoryReplay();
    for (let i = 0; i < 3; i++) stored.append("p");
    stored.held = true;
    const { res, feed, s } = setup(undefined, new ReplayCache(stored, 1 << 20));
    feed.pos = 3; // the feed has fanned out 1..3
    s.start(0);
    // While the page is read, 4 arrives live: the catch-up holds it (the stream's live group batches it too).
    const frame = (seq: number) => msgFrame({ channel: "p", pattern: "p", seq, ts: seq }, new TextEncoder().encode(`{"s":${seq}}`));
    const live4 = frame(4);
    feed.deliver(4, live4);
    stored.release();
    await vi.waitFor(() => expect(s.phase).toBe("live"));
    expect(s.lastSent).toBe(4);
    const ids = () => res.written.flatMap((w) => [...w.matchAll(/id: E:(\d+)/g)].map((m) => Number(m[1])));
    expect(ids()).toEqual([1, 2, 3, 4]);
    // The group's batch of that turn: 4 (already written by the join) and 6.
    const e = (seq: number, f = frame(seq)) => sseEventOf(f, seq, "E");
    s.onEvents([4, 6], [e(4, live4), e(6)], Buffer.concat([e(4, live4), e(6)]));
    expect(ids()).toEqual([1, 2, 3, 4, 6]);
    // 5 was stored above the pages and never reached the feed until a repair found it: written now, as "after 6".
    s.onEvents([5], [e(5)], e(5));
    // 2 (within the pages) delivered late again would be a duplicate: skipped.
    s.onEvents([2], [e(2)], e(2));
    expect(ids()).toEqual([1, 2, 3, 4, 6, 6]);
    expect(res.written.at(-1)).toContain('"seq":5');
  });

  it("sse stream — after write returns false nothing is written until onWritable, which flushes the queue in order", () => {
    const { res, s } = setup();
    s.start(0);
    res.accept = false;
    s.onEvent(1, ev(1));
    expect(res.written).toHaveLength(1);
    s.onEvent(2, ev(2));
    s.onEvent(3, ev(3));
    s.heartbeat(); // skipped while data waits
    expect(res.written).toHaveLength(1);
    expect(s.bufferedAmount()).toBe(ev(2).length + ev(3).length);
    res.accept = true;
    expect(res.writable!(0)).toBe(true);
    expect(res.written).toEqual([1, 2, 3].map((i) => ev(i).toString()));
    expect(s.bufferedAmount()).toBe(0);
  });

  it("sse stream — ended by a draining worker: a stream with bytes waiting is cut at once, a caught-up one ends", () => {
    // A stream whose reader took nothing: event 1 is kept by uWS, event 2 waits in the stream's queue.
    const withBytesWaiting = () => {
      const t = setup();
      t.s.start(0);
      t.res.accept = false;
      t.s.onEvent(1, ev(1));
      t.s.onEvent(2, ev(2));
      return t;
    };
    const behind = withBytesWaiting();
    behind.s.end("ended");
    expect(behind.res.endedWith).toBeUndefined(); // an ordinary end waits for the reader
    const cut = withBytesWaiting();
    cut.s.end("shutdown");
    expect(cut.res.endedWith).toBe("close");
    const idle = setup();
    idle.s.start(0);
    idle.s.onEvent(1, ev(1));
    idle.s.end("shutdown");
    expect(idle.res.endedWith).toBe("end");
  });

  it("sse stream — a flush that is refused again stops there and tells uWS so", () => {
    const { res, s } = setup();
    s.start(0);
    res.accept = false;
    for (let i = 1; i <= 3; i++) s.onEvent(i, ev(i));
    expect(res.writable!(0)).toBe(false); // wrote event 2, refused: event 3 waits
    expect(res.written).toHaveLength(2);
    res.accept = true;
    expect(res.writable!(0)).toBe(true);
    expect(res.written).toEqual([1, 2, 3].map((i) => ev(i).toString()));
  });

  it("sse stream — over BACKPRESSURE_BYTES it leaves the feed; drained below half it rejoins (missed deliveries counted without history)", () => {
    const { res, feed, metrics, s } = setup();
    s.start(0);
    res.accept = false;
    s.onEvent(1, ev(1));
    let seq = 1;
    while (feed.streams.has(s)) {
      (feed as { count: number }).count++;
      s.onEvent(++seq, ev(seq, 200));
    }
    expect(s.phase).toBe("paused");
    expect(metrics.slowSwitches.inc).toHaveBeenCalledTimes(1);
    (feed as { count: number }).count += 5; // delivered to others while this stream was out
    s.onEvent(seq + 1, ev(seq + 1)); // not a listener any more: ignored
    res.accept = true;
    res.writable!(0);
    expect(feed.streams.has(s)).toBe(true);
    expect(s.phase).toBe("live");
    expect(metrics.deliveriesDropped.inc).toHaveBeenCalledWith(5);
    expect(res.written.map((w) => Number(/id: E:(\d+)/.exec(w)![1]))).toEqual(Array.from({ length: seq }, (_, i) => i + 1));
  });

  it("sse stream — still paused after SLOW_CONSUMER_TIMEOUT: the connection is cut and the stream ends once", async () => {
    vi.useFakeTimers();
    try {
      const { res, metrics, s, ends } = setup({ bytes: 1_000, maxBytes: 10_000, slowTimeoutMs: 5_000 });
      s.start(0);
      res.accept = false;
      for (let i = 1; i <= 20; i++) s.onEvent(i, ev(i, 200));
      expect(s.phase).toBe("paused");
      await vi.advanceTimersByTimeAsync(5_001);
      expect(res.endedWith).toBe("close");
      expect(metrics.slowClosed.inc).toHaveBeenCalledTimes(1);
      expect(ends).toEqual(["slow"]);
      s.aborted();
      s.end();
      expect(ends).toEqual(["slow"]);
      expect(res.writable!(0)).toBe(true); // a late writable event touches nothing
    } finally {
      vi.useRealTimers();
    }
  });

  it("sse stream — the worker's epoch moved (stream recreated): the stream ends instead of mixing two numberings", () => {
    const { res, feed, s, ends, current } = setup();
    s.start(0);
    s.onEvent(1, ev(1));
    current.epoch = "F";
    s.onEvent(2, ev(2));
    expect(res.written).toEqual([ev(1).toString()]);
    expect(res.endedWith).toBe("end");
    expect(ends).toEqual(["ended"]);
    expect(feed.streams.has(s)).toBe(false);
  });

  it("sse stream — an aborted response is never written again; control frames of the WebSocket protocol are skipped", () => {
    const { res, feed, s, ends } = setup();
    s.start(0);
    expect(s.send('{"op":"live"}')).toBe(1);
    expect(res.written).toEqual([]);
    s.aborted();
    expect(feed.streams.has(s)).toBe(false);
    s.onEvent(1, ev(1));
    s.heartbeat();
    s.writeEvent("gap", {});
    expect(s.send(ev(2), 2)).toBe(2);
    expect(res.written).toEqual([]);
    expect(ends).toEqual(["aborted"]);
  });
});
