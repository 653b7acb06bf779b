import type { BrokerMessage, Reader, ReaderPosition, ReplayApi } from "../broker/broker.js";
import type { Logger } from "../log.js";
import { FrameScratch } from "../protocol/serialize.js";
import type { Session, Socket, SubState } from "../ws/session.js";
import type { ChannelFeed } from "./hub.js";

export type CatchUpOptions = { bufferLimit: number; backpressureBytes: number };

export type CatchUpEnd =
  | { type: "joined"; lastSent: number }
  /** The socket was taken out of delivery (or uWS dropped a frame); resume later after `lastSent`. */
  | { type: "suspended"; lastSent: number }
  | { type: "failed"; lastSent: number; error: unknown };

type Item = { seq: number; frame: Buffer };

/** Replayed frames are built at write time into this buffer (uWS copies each one as it is sent). */
const scratch = new FrameScratch();

/** A reader with messages pending that delivers nothing for this long is replaced. */
const READER_STALL_MS = 6_000;
const STALL_CHECK_MS = 2_000;
/** A replacement reader that cannot be opened (a NATS failover is electing leaders) is retried with backoff. */
const REOPEN_ATTEMPTS = 6;
const REOPEN_BASE_MS = 250;

/**
 * Replays a pattern to one socket from a start position, then hands it to the worker's shared live feed
 * with no gap and no duplicate. While the per-socket reader runs, live messages of the feed are held in a
 * bounded buffer. The socket joins the live topic as soon as the reader has delivered the first buffered
 * message (everything after it is in the buffer), or when the broker reports nothing pending after a
 * message (everything newer is in the buffer). The reader is then stopped: no per-client consumer remains
 * once the client is live. When the socket's buffer fills, the reader pauses its pulls until the socket
 * drains; a reader that breaks or stalls is replaced by one reading on from the last seq written.
 */
export class CatchUp {
  private buffer: Item[] = [];
  private overflowed = false;
  /** Replayed messages not yet written: framed and sent in corked batches (one syscall for many frames). */
  private queue: BrokerMessage[] = [];
  private flushScheduled = false;
  private reader?: Reader;
  /** Generation of the current reader; callbacks of a stopped reader are ignored. */
  private gen = 0;
  private finished = false;
  /** Kept from the start: uWS forbids touching a closed socket, the session object stays valid. */
  private readonly session: Session;
  /** Last seq queued for this socket (`lastWritten` trails it by the queue). */
  lastSent: number;
  private lastWritten: number;
  readers = 0;
  /** Times the reader paused for a full socket; replayed frames written; for the end-of-replay debug line. */
  private throttles = 0;
  private replayed = 0;
  private readonly startedAt = Date.now();
  /** Replaces a reader that went silent (its NATS node died: nats.js does not recreate it). */
  private watchdog?: NodeJS.Timeout;
  private lastActivity = Date.now();
  private throttled = false;
  private reopenFailures = 0;

  constructor(
    private readonly ws: Socket,
    private readonly sub: SubState,
    private readonly feed: ChannelFeed,
    private readonly replay: ReplayApi,
    private readonly opts: CatchUpOptions,
    private readonly log: Logger,
    lastSent: number,
    private readonly onEnd: (end: CatchUpEnd) => void,
  ) {
    this.lastSent = lastSent;
    this.lastWritten = lastSent;
    this.session = ws.getUserData();
  }

  get active(): boolean {
    return !this.finished;
  }

  async start(position: ReaderPosition): Promise<void> {
    this.feed.catchups.add(this);
    this.watchdog = setInterval(() => this.checkStall(), STALL_CHECK_MS);
    this.watchdog.unref();
    await this.openReader(position);
  }

  private checkStall(): void {
    if (this.finished || this.throttled || !this.reader || Date.now() - this.lastActivity < READER_STALL_MS) return;
    this.log.warn({ pattern: this.sub.pattern, after: this.lastWritten }, "catch-up reader stalled; replacing it");
    this.replaceReader();
  }

  /** Drops the current reader and what it queued, and reads on after the last frame written. */
  private replaceReader(): void {
    this.flushQueued();
    if (this.finished) return;
    const r = this.reader;
    this.reader = undefined;
    this.gen++;
    this.queue = [];
    this.lastSent = this.lastWritten;
    if (r) void r.stop().catch(() => undefined);
    this.lastActivity = Date.now();
    this.throttled = false;
    void this.openReader({ seq: this.lastWritten + 1 });
  }

  private async openReader(position: ReaderPosition): Promise<void> {
    const gen = ++this.gen;
    this.readers++;
    let reader: Reader;
    try {
      reader = await this.replay.reader(this.sub.pattern, position, this.opts.backpressureBytes >> 1, {
        onMessage: (m, pending) => {
          if (gen === this.gen) this.onStored(m, pending);
        },
        onLost: (err) => {
          if (gen !== this.gen || this.finished) return;
          this.log.warn({ err, pattern: this.sub.pattern, after: this.lastWritten }, "catch-up reader lost; replacing it");
          this.reader = undefined;
          this.replaceReader();
        },
      });
    } catch (e) {
      if (this.finished || gen !== this.gen) return;
      if (this.readers > 1 && this.reopenFailures < REOPEN_ATTEMPTS) return this.retryReopen(gen, e);
      this.finish();
      this.onEnd({ type: "failed", lastSent: this.lastWritten, error: e });
      return;
    }
    if (this.finished || gen !== this.gen) {
      void reader.stop().catch(() => undefined);
      return;
    }
    this.reader = reader;
    this.reopenFailures = 0;
    this.lastActivity = Date.now();
    this.throttled = false;
    if (reader.initialPending === 0 && !this.overflowed && this.queue.length === 0) this.join();
  }

  private retryReopen(gen: number, err: unknown): void {
    const delay = REOPEN_BASE_MS * 2 ** this.reopenFailures++;
    this.log.warn({ err, pattern: this.sub.pattern, after: this.lastWritten, retryInMs: delay }, "catch-up reader could not be reopened; retrying");
    const t = setTimeout(() => {
      if (!this.finished && gen === this.gen) void this.openReader({ seq: this.lastWritten + 1 });
    }, delay);
    t.unref();
  }

  /** A live message of the feed (called by the hub after publishing it to the topic). */
  onLive(seq: number, frame: Buffer): void {
    if (this.finished || seq <= this.lastSent) return;
    if (this.buffer.length >= this.opts.bufferLimit) {
      // The reader will deliver these itself; only the shortcut of joining on "nothing pending" is lost.
      this.buffer = [];
      this.overflowed = true;
    }
    this.buffer.push({ seq, frame });
  }

  private onStored(m: BrokerMessage, pending: number): void {
    if (this.finished || m.seq <= this.lastSent) return;
    if (this.session.closed) return this.abort();
    this.lastActivity = Date.now();
    this.queue.push(m);
    this.lastSent = m.seq;
    if (this.buffer.length > 0 && this.buffer[0]!.seq <= m.seq) return this.join();
    if (pending === 0 && !this.overflowed) return this.join();
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flushQueued());
    }
  }

  private flushQueued(): void {
    this.flushScheduled = false;
    if (this.finished || this.queue.length === 0) return;
    if (this.session.closed) return this.abort();
    let ok = true;
    this.ws.cork(() => {
      ok = this.writeQueue();
    });
    if (!ok) return this.suspend();
    if (this.ws.getBufferedAmount() > this.opts.backpressureBytes >> 2) this.throttle();
  }

  /**
   * The socket holds a quarter of the backpressure threshold: the reader stops asking for more (at most its
   * window, half the threshold, still arrives and is written) and asks again once the socket has drained.
   * Both together stay under the threshold, so a throttled catch-up is not also taken for a slow client.
   */
  private throttle(): void {
    if (this.throttled || !this.reader) return;
    this.throttled = true;
    this.throttles++;
    const r = this.reader;
    r.pause();
    this.session.drainWaiters.push(() => {
      if (this.finished || this.session.closed || this.reader !== r) return;
      this.throttled = false;
      this.lastActivity = Date.now();
      r.resume();
    });
  }

  /** Writes the queue (inside a cork); false when uWS dropped a frame (buffer over the hard cap). */
  private writeQueue(): boolean {
    const q = this.queue;
    this.queue = [];
    const pattern = this.sub.pattern;
    for (const m of q) {
      if (!this.write(scratch.frame(m.channel, pattern, m.seq, m.ts, m.payload), m.seq)) return false;
    }
    return true;
  }

  /** Writes one frame; false when uWS dropped it, leaving `lastWritten` at the frame before. */
  private write(frame: Uint8Array, seq: number): boolean {
    if (this.ws.send(frame, false, false) === 2) {
      this.lastSent = this.lastWritten;
      return false;
    }
    this.lastWritten = seq;
    this.lastSent = Math.max(this.lastSent, seq);
    this.replayed++;
    return true;
  }

  private join(): void {
    if (this.session.closed) return this.abort();
    const buffered = this.buffer;
    let dropped = false;
    // One synchronous, corked step: queued replay, then held live frames, then the topic. No live message
    // can be fanned out in between, so nothing is missed or sent twice.
    this.ws.cork(() => {
      if (!this.writeQueue()) {
        dropped = true;
        return;
      }
      for (const b of buffered) {
        if (b.seq <= this.lastSent) continue;
        if (!this.write(b.frame, b.seq)) {
          dropped = true;
          return;
        }
      }
      this.ws.subscribe(this.feed.topic);
      this.ws.send(`{"op":"live","sub":${JSON.stringify(this.sub.pattern)},"seq":${this.lastSent}}`, false, false);
    });
    this.finish();
    if (this.log.isLevelEnabled("debug")) {
      this.log.debug({ pattern: this.sub.pattern, frames: this.replayed, ms: Date.now() - this.startedAt, readers: this.readers, throttles: this.throttles }, "catch-up joined live");
    }
    this.onEnd(dropped ? { type: "suspended", lastSent: this.lastWritten } : { type: "joined", lastSent: this.lastSent });
  }

  /** Stops replaying (the socket is paused for backpressure); the owner resumes after what was written. */
  suspend(): void {
    if (this.finished) return;
    this.finish();
    this.onEnd({ type: "suspended", lastSent: this.lastWritten });
  }

  /** The socket closed or unsubscribed. */
  abort(): void {
    this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.gen++;
    if (this.watchdog) clearInterval(this.watchdog);
    this.feed.catchups.delete(this);
    this.buffer = [];
    this.queue = [];
    const r = this.reader;
    this.reader = undefined;
    if (r) r.stop().catch((e) => this.log.debug({ err: e }, "stopping catch-up reader failed"));
  }
}
