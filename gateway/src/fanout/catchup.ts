import { GatewayError } from "../errors.js";
import type { Logger } from "../log.js";
import { ErrorCode } from "../protocol/codes.js";
import { Handoff, type HandoffEnd, type HandoffItem, type HandoffPort, type WriteResult } from "./handoff.js";
import type { Feed } from "./feed.js";
import type { LiveListener } from "./routes.js";
import type { FramePage, PageEnd, PageSource } from "./replay-cache.js";
import type { FanoutSocket } from "./socket.js";
import type { MsgFrames } from "../protocol/codec.js";

export type CatchUpOptions = {
  /** Live messages, and their bytes, held at most while the pages are read (CATCHUP_BUFFER_MESSAGES/BYTES). */
  holdLimit: number;
  holdBytes?: number;
  /** Not joined by then, the catch-up fails with a temporary `slow_consumer` (CATCHUP_DEADLINE). */
  deadlineMs?: number;
  /** How long failed page reads are retried, in backoff waits, before the catch-up fails (CATCHUP_RETRY_FOR). */
  retryForMs?: number;
  backpressureBytes: number;
};
export type CatchUpEnd = HandoffEnd;

/**
 * A page read that failed (a NATS failover is electing leaders) is retried after FETCH_BASE_MS, doubling, as
 * long as the waits add up to at most `retryForMs` (CATCHUP_RETRY_FOR's default: six retries, 15.75 s).
 */
const FETCH_BASE_MS = 250;
const RETRY_FOR_MS = 16_000;

/**
 * Replays a pattern to one socket from its last seq, then hands it to the worker's live feed with no gap
 * and no duplicate. The decisions are the pure `Handoff` machine's; this class does its I/O: pages from the
 * shared `ReplayCache`, writes to the socket in corked batches, waits for drain when the socket holds a
 * quarter of the backpressure threshold (so that a catch-up is never taken for a slow client), and joins
 * the feed's topic. Nothing is left on the broker at any point: pages are direct gets.
 */
export class CatchUp implements HandoffPort<MsgFrames>, LiveListener {
  private readonly h: Handoff<MsgFrames>;
  private readonly limit: number;
  private failures = 0;
  /** The backoff waits since the last page read that succeeded. */
  private retriedMs = 0;
  private readonly retryForMs: number;
  private readonly startedAt = Date.now();
  private deadline?: NodeJS.Timeout;
  /** Leaves the feed's live route (set by `start`). */
  private leaveLive?: () => void;
  private readonly deadlineMs?: number;
  /** The page being written, whose runs a socket that reads coalesced frames gets as coalesced frames. */
  private page?: FramePage;

  constructor(
    private readonly sock: FanoutSocket,
    private readonly pattern: string,
    private readonly feed: Feed,
    private readonly cache: PageSource,
    opts: CatchUpOptions,
    private readonly log: Logger,
    lastSent: number,
    private readonly onEnd: (end: CatchUpEnd) => void,
  ) {
    this.limit = opts.backpressureBytes >> 2;
    this.deadlineMs = opts.deadlineMs;
    this.retryForMs = opts.retryForMs ?? RETRY_FOR_MS;
    this.h = new Handoff(this, lastSent, feed.position(), opts.holdLimit, {
      holdBytes: opts.holdBytes,
      sizeOf: (f) => f.size,
      slowError: () =>
        new GatewayError(
          ErrorCode.SlowConsumer,
          `${pattern}: the client read too slowly to catch up (more than ${opts.holdLimit} live messages or ${opts.holdBytes ?? "∞"} bytes waiting)`,
        ),
    });
  }

  get active(): boolean {
    return !this.h.done;
  }

  start(): void {
    this.leaveLive = this.feed.routes.add("live", this);
    const ms = this.deadlineMs;
    if (ms !== undefined) {
      this.deadline = setTimeout(
        () => this.h.expire(new GatewayError(ErrorCode.SlowConsumer, `${this.pattern}: the catch-up did not finish within ${ms} ms`)),
        ms,
      );
      this.deadline.unref();
    }
    this.h.start();
  }

  /** A live message of the feed (the hub calls it after publishing to the topic). */
  onLive(seq: number, msg: MsgFrames): void {
    this.h.live(seq, msg);
  }

  /** The socket left live delivery (slow): stop after what was written; `onEnd` says where. */
  suspend(): void {
    this.h.suspend();
  }

  /** Unsubscribed or closed. */
  abort(): void {
    clearTimeout(this.deadline);
    this.h.cancel();
    this.leaveLive?.();
  }

  fetch(from: number, target: number): void {
    // The next page is asked for as soon as this one's end is known (before its frames are built): reads
    // follow each other back to back while the worker builds and writes. When the page was dense (every
    // stored message in its range matched: one busy channel), the one after is asked for too, assuming the
    // next page is as long: nats-server then always has a request waiting. A wrong guess costs a read, never
    // a message: it is a page of its own range like any other.
    const next = (p: PageEnd): void => {
      if (p.coverEnd >= target || this.h.done) return;
      this.cache.prefetch(this.pattern, p.coverEnd + 1, target);
      const dense = p.count > 0 && p.count === p.coverEnd - p.from + 1;
      if (dense && p.coverEnd + p.count < target) this.cache.prefetch(this.pattern, p.coverEnd + 1 + p.count, target);
    };
    this.cache.get(this.pattern, from, target, next).then(
      (page) => {
        this.failures = 0;
        this.retriedMs = 0;
        if (this.sock.closed) return this.abort();
        this.page = page;
        this.h.page(from, page);
      },
      (e) => {
        if (this.h.done) return;
        const delay = FETCH_BASE_MS * 2 ** this.failures;
        if (this.retriedMs + delay > this.retryForMs) return this.h.fetchFailed(from, e);
        this.failures++;
        this.retriedMs += delay;
        this.log.warn({ err: e, pattern: this.pattern, from, retryInMs: delay }, "catch-up read failed; retrying");
        setTimeout(() => {
          if (!this.h.done) this.fetch(from, target);
        }, delay).unref();
      },
    );
  }

  write(items: readonly HandoffItem<MsgFrames>[], start: number): WriteResult {
    const s = this.sock;
    if (s.closed) {
      this.abort();
      return { n: 0 };
    }
    // `items` is the page's, or the part of it the feed has not passed (PROTOCOL.md "Coalesced frames": a
    // delta subscription's socket says it reads none).
    const page = s.coalesce === true && this.page?.items[start] === items[start] ? this.page : undefined;
    let i = start;
    let stop: WriteResult["stop"];
    s.cork(() => {
      while (i < items.length) {
        if (s.bufferedAmount() > this.limit) {
          stop = "full";
          return;
        }
        const next = page ? page.coalesced(s.codec, i, items.length) : { frame: (items[i] as HandoffItem<MsgFrames>).frame.frame(s.codec), end: i + 1 };
        if (s.send(next.frame, items[next.end - 1]?.seq) === 2) {
          stop = "dropped";
          return;
        }
        i = next.end;
      }
    });
    return { n: i - start, stop };
  }

  waitDrain(): void {
    this.sock.onDrained(() => {
      if (this.sock.closed) return this.abort();
      this.h.resume();
    });
  }

  join(held: readonly HandoffItem<MsgFrames>[]): WriteResult {
    const s = this.sock;
    if (s.closed) {
      this.abort();
      return { n: 0 };
    }
    let n = 0;
    let stop: WriteResult["stop"];
    // One synchronous, corked step: held live frames, then the topic. No live message can be fanned out in
    // between, so nothing is missed or sent twice.
    s.cork(() => {
      for (const item of held) {
        if (s.send(item.frame.frame(s.codec), item.seq) === 2) {
          stop = "dropped";
          return;
        }
        n++;
      }
      this.feed.join(s);
      const last = held[n - 1]?.seq ?? this.h.lastSent;
      // A codec without a `live` frame (Centrifuge's) encodes it as nothing: nothing is sent.
      const live = s.codec.encode({ op: "live", sub: this.pattern, seq: last });
      if (live.length > 0) s.send(live);
    });
    return { n, stop };
  }

  end(e: CatchUpEnd): void {
    clearTimeout(this.deadline);
    this.page = undefined;
    this.leaveLive?.();
    if (this.log.isLevelEnabled("debug")) {
      this.log.debug(
        { pattern: this.pattern, end: e.type, lastSent: e.lastSent, pages: this.h.pages, throttles: this.h.throttles, ms: Date.now() - this.startedAt },
        "catch-up ended",
      );
    }
    this.onEnd(e);
  }
}
