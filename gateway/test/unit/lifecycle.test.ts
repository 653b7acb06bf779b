// The subscription lifecycle every door shares (fanout/lifecycle.ts) and its per-pattern groups
// (fanout/groups.ts), in process: a fake door (a socket that records frames and its live group as a flag),
// a fake feed, and the real resume path over a memory stream. Both doors (ws/subscriptions.ts, sse/stream.ts)
// supply only a SubDoor; what is asserted here holds for either.
import { afterEach, describe, expect, it, vi } from "vitest";
import { GatewayError } from "../../src/errors.js";
import { LateGroup, PatternGroups, type LateMember } from "../../src/fanout/groups.js";
import type { FanoutHub } from "../../src/fanout/hub.js";
import { Flow, SubLifecycle, type DeliveryFailure, type SubDoor } from "../../src/fanout/lifecycle.js";
import { ReplayCache, type PageSource } from "../../src/fanout/replay-cache.js";
import { Resume } from "../../src/fanout/resume.js";
import type { FanoutSocket } from "../../src/fanout/socket.js";
import { JSON_CODEC } from "../../src/protocol/codecs.js";
import { createLogger } from "../../src/log.js";
import { ErrorCode } from "../../src/protocol/codes.js";
import { FakeFeed, fixedFrames } from "#testkit/fake-feed.js";
import { MemoryReplay } from "#testkit/memory-replay.js";

const log = createLogger("silent", {});

/** A socket that takes every frame and records the seqs of message frames; `live` is its live group. */
class FakeSocket implements FanoutSocket {
  readonly codec = JSON_CODEC;
  closed = false;
  live = false;
  seqs: number[] = [];
  send(_frame: Uint8Array | string, seq?: number): number {
    if (seq !== undefined) this.seqs.push(seq);
    return 1;
  }
  cork(fn: () => void): void {
    fn();
  }
  bufferedAmount(): number {
    return 0;
  }
  joinTopic(): void {
    this.live = true;
  }
  onDrained(fn: () => void): void {
    fn();
  }
}

type Setup = { pages?: PageSource; connected?: boolean; slowTimeoutMs?: number };

function setup(o: Setup = {}) {
  const socket = new FakeSocket();
  const feed = new FakeFeed("p", 10, 10);
  const dropped = { inc: vi.fn() };
  const resume = new Resume({ pages: o.pages } as unknown as FanoutHub, { holdLimit: 100, backpressureBytes: 1 << 20 }, log, dropped);
  const failures: DeliveryFailure[] = [];
  const slow = vi.fn();
  const counts = { switches: { inc: vi.fn() }, closed: { inc: vi.fn() } };
  const flow = new Flow(() => [life], { slowTimeoutMs: o.slowTimeoutMs ?? 60_000, onSlow: slow, ...counts });
  const door: SubDoor = {
    socket,
    flow,
    joined: vi.fn(),
    leaveLive: () => {
      socket.live = false;
    },
    livePosition: (f) => f.position(),
    failed: (f) => failures.push(f),
  };
  const life = new SubLifecycle("p", door, { resume, connected: () => o.connected ?? true, log });
  return { socket, feed, life, flow, door, failures, slow, counts, dropped };
}

/** A page source whose every read fails (the broker cannot be read). */
const failing = (e: unknown): PageSource => ({
  get: () => Promise.reject(e),
  prefetch: () => undefined,
  stats: () => ({ pages: 0, bytes: 0, fetches: 0, hits: 0, sweepPages: 0 }),
});

afterEach(() => {
  vi.useRealTimers();
});

describe("lifecycle — phases", () => {
  it("lifecycle — a live start joins at the feed's position; a pause leaves live and parks there; a resume without history joins again and counts the missed", () => {
    const t = setup();
    expect(t.life.start(t.feed)).toBe(10);
    expect(t.life.phase).toBe("live");
    expect(t.socket.live).toBe(true);
    expect(t.door.joined).toHaveBeenCalledTimes(1);
    t.flow.pause();
    expect(t.life.phase).toBe("paused");
    expect(t.socket.live).toBe(false);
    expect(t.life.resumeAfter).toBe(10);
    expect(t.counts.switches.inc).toHaveBeenCalledTimes(1);
    t.feed.count += 4; // delivered to others while it was out
    t.flow.resume();
    expect(t.life.phase).toBe("live");
    expect(t.socket.live).toBe(true);
    expect(t.dropped.inc).toHaveBeenCalledWith(4);
  });

  it("lifecycle — a start while the receiver is paused parks after its start position, and the resume catches up from there", async () => {
    const stored = new MemoryReplay();
    for (let i = 0; i < 10; i++) stored.append("p");
    const t = setup({ pages: new ReplayCache(stored, 1 << 20) });
    t.flow.pause();
    expect(t.life.start(t.feed, 6)).toBeUndefined();
    expect(t.life.phase).toBe("paused");
    expect(t.life.resumeAfter).toBe(6);
    t.flow.resume();
    expect(t.life.phase).toBe("catchup");
    await vi.waitFor(() => expect(t.life.phase).toBe("live"));
    expect(t.socket.seqs).toEqual([7, 8, 9, 10]);
  });

  it("lifecycle — ending is once: the phase it was in, then undefined; a live one leaves live, an ended one never starts", () => {
    const t = setup();
    t.life.start(t.feed);
    expect(t.life.end()).toBe("live");
    expect(t.socket.live).toBe(false);
    expect(t.life.end()).toBeUndefined();
    expect(t.life.start(t.feed)).toBeUndefined();
    expect(t.life.phase).toBe("ended");
    expect(t.socket.live).toBe(false);
  });

  it("lifecycle — a durable subscription is outside delivery: a pause leaves it alone", () => {
    const t = setup();
    t.life.durable();
    t.flow.pause();
    expect(t.life.phase).toBe("durable");
  });
});

describe("lifecycle — a failed catch-up is one code for every door", () => {
  const failedWith = async (error: unknown, connected: boolean): Promise<DeliveryFailure[]> => {
    vi.useFakeTimers();
    const t = setup({ pages: failing(error), connected });
    t.life.start(t.feed, 3);
    // The catch-up retries its read with backoff before it gives up.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(t.life.phase).toBe("ended");
    expect(t.socket.live).toBe(false);
    return t.failures;
  };

  it("lifecycle — while the broker is disconnected: broker_unavailable, temporary, resuming after the last seq sent", async () => {
    expect(await failedWith(new Error("connection closed"), false)).toEqual([
      { code: ErrorCode.BrokerUnavailable, message: "broker is not connected; retry", temporary: true, lastSent: 3 },
    ]);
  });

  it("lifecycle — while it is connected: broker_error", async () => {
    const [f] = await failedWith(new Error("stream not found"), true);
    expect(f?.code).toBe(ErrorCode.BrokerError);
    expect(f?.message).toContain("replay of p failed: stream not found");
  });

  it("lifecycle — a gateway error keeps its code (a slow reader is slow_consumer)", async () => {
    const [f] = await failedWith(new GatewayError(ErrorCode.SlowConsumer, "too slow"), true);
    expect(f).toMatchObject({ code: ErrorCode.SlowConsumer, message: "too slow", temporary: true });
  });
});

describe("lifecycle — the flow and its slow timer", () => {
  it("lifecycle — still paused when the slow timer fires: cut once, counted once", async () => {
    vi.useFakeTimers();
    const t = setup({ slowTimeoutMs: 5_000 });
    t.life.start(t.feed);
    t.flow.pause();
    t.flow.pause(); // idempotent: one switch, one timer
    await vi.advanceTimersByTimeAsync(5_001);
    expect(t.slow).toHaveBeenCalledTimes(1);
    expect(t.counts.closed.inc).toHaveBeenCalledTimes(1);
    expect(t.counts.switches.inc).toHaveBeenCalledTimes(1);
    t.flow.resume(); // cut: nothing resumes
    expect(t.life.phase).toBe("paused");
  });

  it("lifecycle — resumed before the timer: never cut; a stopped flow neither pauses nor cuts", async () => {
    vi.useFakeTimers();
    const t = setup({ slowTimeoutMs: 5_000 });
    t.life.start(t.feed);
    t.flow.pause();
    await vi.advanceTimersByTimeAsync(4_000);
    t.flow.resume();
    await vi.advanceTimersByTimeAsync(10_000);
    expect(t.slow).not.toHaveBeenCalled();
    t.flow.stop();
    t.flow.pause();
    t.flow.cut();
    expect(t.life.phase).toBe("live");
    expect(t.slow).not.toHaveBeenCalled();
  });
});

describe("lifecycle — per-pattern groups", () => {
  it("groups — a group listens to its feed while it has members, and one of a replaced feed is dropped for the new one", () => {
    const groups = new PatternGroups<LateMember>((feed) => new LateGroup(feed));
    const a = new FakeFeed("p");
    const m1 = { covered: 0, socket: new FakeSocket() };
    const m2 = { covered: 0, socket: new FakeSocket() };
    groups.join(a, m1);
    groups.join(a, m2);
    expect(a.routes.of("late").size).toBe(1);
    groups.leave("p", m1);
    expect(a.routes.of("late").size).toBe(1);
    groups.leave("p", m1); // not a member any more: no-op
    groups.leave("p", m2);
    expect(a.routes.of("late").size).toBe(0);
    expect(groups.size).toBe(0);
    groups.join(a, m1);
    const b = new FakeFeed("p");
    groups.join(b, m2);
    expect(a.routes.of("late").size).toBe(0);
    expect(b.routes.of("late").size).toBe(1);
  });

  it("groups — a late repair reaches only the members whose catch-up did not cover it, and no closed socket", () => {
    const g = new LateGroup(new FakeFeed("p"));
    const low = { covered: 3, socket: new FakeSocket() };
    const high = { covered: 8, socket: new FakeSocket() };
    const gone = { covered: 0, socket: Object.assign(new FakeSocket(), { closed: true }) };
    for (const m of [low, high, gone]) g.members.add(m);
    g.onLate(5, fixedFrames(Buffer.from("m5")));
    expect(low.socket.seqs).toEqual([5]);
    expect(high.socket.seqs).toEqual([]);
    expect(gone.socket.seqs).toEqual([]);
  });
});
