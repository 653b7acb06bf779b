import { randomBytes } from "node:crypto";
import type { BackpressureSection } from "../config/sections/index.js";
import type { Feed } from "../fanout/feed.js";
import { Flow, SubLifecycle, type DeliveryFailure, type Joined, type SubPhase } from "../fanout/lifecycle.js";
import type { Resume } from "../fanout/resume.js";
import type { FanoutSocket } from "../fanout/socket.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import type { HttpResponse } from "../uws.js";
import { HEARTBEAT, namedEvent, sseEventOf, withEventId } from "./event.js";
import type { SseLive, SseReceiver } from "./live.js";
import { JSON_CODEC } from "../protocol/codecs.js";

/** Why a stream ended: the client left, the server ended it (drain, recreated stream), or it was too slow. */
export type SseEndReason = "aborted" | "ended" | "slow" | "failed" | "expired" | "shutdown";

export type SseStreamDeps = {
  /** The resume path shared with every door (catch-up, then live). */
  resume: Resume;
  /** Whether the broker is connected now (a failed catch-up's code depends on it). */
  connected: () => boolean;
  /** Live delivery of SSE streams (one encoding per message per worker). */
  live: SseLive;
  config: Readonly<{ backpressure: BackpressureSection }>;
  metrics: Metrics;
  log: Logger;
  /** The broker's current epoch, which event ids carry (undefined on a broker without history). */
  epoch: () => string | undefined;
  onEnd: (s: SseStream, why: SseEndReason) => void;
};

let nextId = 1;

/**
 * One Server-Sent Events response subscribed to one pattern: the resume path sees it as a `FanoutSocket`
 * (catch-ups write to it, and its join is to the pattern's live SSE group). uWS HTTP responses take a
 * write while the kernel has room; once `write` returns false they must not be written again before
 * `onWritable` (this uWS build loses data written in between), so later events wait in a queue here, and
 * the queue is the stream's buffered amount. Over BACKPRESSURE_BYTES it leaves live delivery and is caught
 * up from the stream once it drained, like a slow WebSocket; still paused after SLOW_CONSUMER_TIMEOUT it
 * is cut, and the client's EventSource resumes with Last-Event-ID. The phase, the pause, the slow timer and
 * the end are the subscription lifecycle's (fanout/lifecycle.ts), as for a WebSocket: this class is the SSE
 * door of it (how a stream joins live, and how it writes events and errors).
 */
export class SseStream implements FanoutSocket, SseReceiver {
  /** Events carry `msg` frames as JSON. */
  readonly codec = JSON_CODEC;
  /** Unique within the worker (the control plane lists streams by it). */
  readonly id = nextId++;
  /** The last seq written to the response (the client resumes after it). */
  lastSent = 0;
  /**
   * Since the last join: every stored message up to here was written (or predates the start); with the
   * seqs written at the join (`joinHeld`, for the feed's batch that was under way then), what a message the
   * feed repaired late needs to tell whether this stream has it.
   */
  private covered = 0;
  private joinHeld?: ReadonlySet<number>;
  private queue: (Buffer | string)[] = [];
  private head = 0;
  private queued = 0;
  /** `write` returned false: nothing more is written before `onWritable`. */
  private blocked = false;
  private drainWaiters: (() => void)[] = [];
  /** The stream's client id (events name it, as a WebSocket's): 16 characters of base64url. */
  readonly clientId = randomBytes(12).toString("base64url");
  private readonly life: SubLifecycle;
  private readonly flow: Flow;
  private expiryTimer?: NodeJS.Timeout;
  /** Ended with events still queued (the last one an `err`): they go out first, cut after this timer. */
  private ending?: NodeJS.Timeout;

  constructor(
    private readonly res: HttpResponse,
    readonly pattern: string,
    readonly ip: string,
    private readonly feed: Feed,
    private readonly deps: SseStreamDeps,
    /** The epoch the stream's position belongs to (read from the stream when it opened). */
    readonly epoch: string | undefined,
    /** Who opened it (the token's `sub`, `api-key`, or `anon`): the control plane finds a user's streams by it. */
    readonly user = "anon",
  ) {
    const { metrics, log, config } = deps;
    this.flow = new Flow(() => [this.life], {
      slowTimeoutMs: config.backpressure.slowTimeoutMs,
      onSlow: () => {
        log.info({ pattern: this.pattern, buffered: this.queued }, "closing slow sse stream");
        this.end("slow");
      },
      switches: metrics.slowSwitches,
      closed: metrics.slowClosed,
    });
    this.life = new SubLifecycle(
      pattern,
      {
        socket: this,
        flow: this.flow,
        joined: (end) => this.joined(end),
        leaveLive: () => deps.live.leave(pattern, this),
        livePosition: () => this.lastSent,
        failed: (f) => this.failed(f),
      },
      { resume: deps.resume, connected: deps.connected, log },
    );
    res.onWritable(() => {
      if (this.closed && !this.ending) return true;
      this.blocked = false;
      if (this.ending) this.flushAndEnd();
      else this.flush();
      return !this.blocked;
    });
  }

  /** starting → (catchup → live | live) ⇄ paused (slow reader) → ended; fanout/lifecycle.ts owns it. */
  get phase(): SubPhase {
    return this.life.phase;
  }

  get closed(): boolean {
    return this.life.phase === "ended";
  }

  /** Starts delivery after `lastSent` (stored messages, then live), or live from the feed's position. */
  start(lastSent: number | undefined): void {
    if (lastSent !== undefined) this.lastSent = lastSent;
    this.life.start(this.feed, lastSent);
  }

  // --- FanoutSocket (what catch-ups write to) ---

  send(frame: Uint8Array | string, seq?: number): number {
    if (this.closed) return 2;
    if (seq === undefined || typeof frame === "string") return 1; // control frames of the WebSocket protocol
    if (this.epochMoved()) return 2;
    const r = this.write(sseEventOf(frame, seq, this.epoch));
    if (r !== 2) this.lastSent = seq;
    return r;
  }

  cork(fn: () => void): void {
    if (this.closed) return;
    this.res.cork(fn);
  }

  bufferedAmount(): number {
    return this.queued;
  }

  joinTopic(): void {
    if (!this.closed) this.deps.live.join(this.feed, this);
  }

  onDrained(fn: () => void): void {
    this.drainWaiters.push(fn);
  }

  // --- live delivery (the hub) ---

  onEvents(seqs: readonly number[], events: readonly Buffer[], joined: Buffer): void {
    if (this.phase !== "live" || this.epochMoved()) return;
    const held = this.joinHeld;
    this.joinHeld = undefined; // only the batch under way at the join can hold what the join wrote
    const first = seqs[0];
    const last = seqs.at(-1);
    if (first === undefined || last === undefined) return;
    let r = 0;
    this.res.cork(() => {
      if (first > this.lastSent && ascending(seqs)) {
        r = this.write(joined);
        if (r !== 2) this.lastSent = last;
        return;
      }
      for (const [i, seq] of seqs.entries()) {
        const event = events[i];
        if (event === undefined) continue;
        if (seq > this.lastSent) {
          r = this.write(event);
          if (r === 2) return;
          this.lastSent = seq;
        } else if (seq > this.covered && !held?.has(seq)) {
          // Repaired late by the live feed (older than messages sent since): never written here, so it is
          // now; its id keeps the position, so a reconnect neither loses nor repeats anything.
          r = this.write(this.epoch === undefined ? event : withEventId(event, this.epoch, this.lastSent));
          if (r === 2) return;
        }
        // Otherwise written by the catch-up (its pages, or the join).
      }
    });
    if (r === 2 || this.queued > this.deps.config.backpressure.bytes) this.flow.pause();
  }

  /** One live event (as `onEvents` with a batch of one). */
  onEvent(seq: number, event: Buffer): void {
    this.onEvents([seq], [event], event);
  }

  /** A comment line for idle streams (proxies close silent connections). */
  heartbeat(): void {
    if (this.closed || this.blocked || this.queued > 0) return;
    this.res.cork(() => this.write(HEARTBEAT));
  }

  /** Writes a named event (`gap`, `err`). */
  writeEvent(name: string, data: unknown, id?: string): void {
    if (this.closed) return;
    this.res.cork(() => this.write(namedEvent(name, data, id)));
  }

  /** Ends the response (drain, recreated stream, failure): the client's EventSource reconnects and resumes. */
  end(why: SseEndReason = "ended"): void {
    if (this.closed) return;
    // What is queued (an `err` event last) is written before the response ends, unless the reader is cut.
    // The worker is draining: nothing waits for a reader that is behind (the process exits soon, and its
    // heartbeats stopped), it resumes by its last event id.
    const cut = why === "slow" || (why === "shutdown" && (this.blocked || this.queued > 0));
    const drain = !cut && (this.blocked || this.queued > 0);
    this.finish(why, drain);
    if (cut) this.res.close();
    else if (!drain) this.res.cork(() => this.res.end());
    else {
      this.ending = setTimeout(() => {
        this.ending = undefined;
        this.res.close();
      }, this.deps.config.backpressure.slowTimeoutMs);
      this.ending.unref();
    }
  }

  /**
   * Ends the stream at `dueMs` (the token's expiry) with an `err` event: `unauthorized` (the reconnect needs a
   * valid token), or for a subscription token's expiry `subscription_expired` (reopen with a new `sub_token`).
   */
  endAt(dueMs: number, err: { code: string; message: string; temporary: boolean } = TOKEN_EXPIRED): void {
    clearTimeout(this.expiryTimer);
    const wait = Math.min(Math.max(dueMs - Date.now(), 0), 2_147_483_647);
    this.expiryTimer = setTimeout(() => {
      if (Date.now() < dueMs) return this.endAt(dueMs, err);
      this.writeEvent("err", err);
      this.end("expired");
    }, wait);
    this.expiryTimer.unref();
  }

  /** The client went away (uWS onAborted): the response must not be touched any more. */
  aborted(): void {
    clearTimeout(this.ending);
    this.ending = undefined;
    if (!this.closed) this.finish("aborted");
  }

  /**
   * The worker's epoch is not the one the stream opened in: the stream was recreated and this worker has
   * not ended its streams yet, or learnt the new epoch only now. Its ids would mix two numberings: end it
   * (the client resumes by its last id, and is told `epochChanged` if that is the old stream's).
   */
  private epochMoved(): boolean {
    if (this.deps.epoch() === this.epoch) return false;
    this.end("ended");
    return true;
  }

  private write(chunk: Buffer | string): number {
    const len = chunk.length;
    if (this.blocked || this.queued > 0) {
      if (this.queued + len > this.deps.config.backpressure.maxBytes) return 2;
      this.queue.push(chunk);
      this.queued += len;
      return 0;
    }
    if (!this.res.write(chunk)) {
      this.blocked = true; // uWS kept this chunk
      return 0;
    }
    return 1;
  }

  /** Ended with events queued: writes them, then ends the response. */
  private flushAndEnd(): void {
    this.res.cork(() => {
      for (let c = this.queue[this.head]; c !== undefined && !this.blocked; c = this.queue[this.head]) {
        this.queue[this.head++] = "";
        if (!this.res.write(c)) this.blocked = true;
      }
      if (this.blocked) return;
      clearTimeout(this.ending);
      this.ending = undefined;
      this.queue = [];
      this.res.end();
    });
  }

  private flush(): void {
    this.res.cork(() => {
      for (let c = this.queue[this.head]; c !== undefined && !this.blocked; c = this.queue[this.head]) {
        this.queue[this.head++] = "";
        this.queued -= c.length;
        if (!this.res.write(c)) this.blocked = true;
      }
    });
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    }
    const bp = this.deps.config.backpressure;
    if (this.drainWaiters.length > 0 && this.queued <= bp.bytes >> 3) {
      const waiters = this.drainWaiters;
      this.drainWaiters = [];
      for (const w of waiters) w();
    }
    if (this.flow.paused && !this.closed && this.queued <= bp.bytes / 2) this.flow.resume();
  }

  /** Joined live: what the catch-up wrote, for telling a late repair from a duplicate (`onEvents`). */
  private joined(end: Joined): void {
    if (end.lastSent > this.lastSent) this.lastSent = end.lastSent;
    this.covered = end.covered;
    this.joinHeld = end.held.length > 0 ? new Set(end.held) : undefined;
  }

  /** A catch-up failed: an `err` event, then the end; the client's EventSource resumes by its last id. */
  private failed(f: DeliveryFailure): void {
    this.writeEvent("err", { code: f.code, message: `${f.message}; the stream ends and resumes on reconnect`, temporary: f.temporary });
    this.end("failed");
  }

  private finish(why: SseEndReason, keepQueue = false): void {
    this.life.end();
    this.flow.stop();
    clearTimeout(this.expiryTimer);
    if (!keepQueue) this.queue = [];
    this.queued = 0;
    this.drainWaiters = [];
    this.deps.onEnd(this, why);
  }
}

/** True when every seq is larger than the one before (a batch without a late repair in it). */
function ascending(seqs: readonly number[]): boolean {
  let prev = -Infinity;
  for (const s of seqs) {
    if (s <= prev) return false;
    prev = s;
  }
  return true;
}

/** The `err` event of a stream whose token expired. */
const TOKEN_EXPIRED = { code: "unauthorized", message: "token expired; reconnect with a new token", temporary: false };
