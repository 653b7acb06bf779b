// SseStream against a fake uWS HttpResponse: what it writes, when it stops writing (uWS loses writes made
// after `write` returned false and before `onWritable`), and how a slow reader leaves and rejoins the feed.
// The feed here has no replay cache (a broker without history), so rejoining is direct; catch-ups with a
// cache are covered by gateway/test/sse.test.ts against real servers.
import { describe, expect, it, vi } from "vitest";
import type { FanoutHub } from "../../src/fanout/hub.js";
import { Resume } from "../../src/fanout/resume.js";
import type { SseLive, SseReceiver } from "../../src/sse/live.js";
import { FakeFeed } from "../support/fake-feed.js";
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

function setup(bp = { bytes: 1_000, maxBytes: 10_000, slowTimeoutMs: 60_000 }) {
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
      resume: new Resume({ pages: undefined } as unknown as FanoutHub, { holdLimit: 100, backpressureBytes: bp.bytes }, log),
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
    s.onEvent(2, ev(2)); // a repeat is never written twice
    expect(res.written).toEqual([ev(1).toString(), ev(2).toString()]);
    expect(s.lastSent).toBe(2);
  });

  it("sse stream — a batch is one write; a stream that joined during the batch gets only what it lacks", () => {
    const { res, s } = setup();
    s.start(0);
    const evs = [1, 2, 3].map((i) => ev(i));
    s.onEvents([1, 2, 3], evs, Buffer.concat(evs));
    expect(res.written).toEqual([Buffer.concat(evs).toString()]);
    const more = [4, 5, 6].map((i) => ev(i));
    s.lastSent = 4; // its catch-up wrote seq 4 before it joined
    s.onEvents([4, 5, 6], more, Buffer.concat(more));
    expect(res.written.slice(1)).toEqual([ev(5).toString(), ev(6).toString()]);
    s.onEvents([5, 6], more.slice(1), Buffer.concat(more.slice(1)));
    expect(res.written).toHaveLength(3);
    expect(s.lastSent).toBe(6);
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
