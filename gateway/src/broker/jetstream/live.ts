import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Logger } from "../../log.js";
import type { BrokerMessage, LiveFeed } from "../broker.js";
import type { StoredMsg } from "./direct/direct-get.js";
import { jsHeaders } from "./headers.js";
import type { RepairReads } from "./replay.js";
import { SubjectSequencer } from "./sequencer.js";
import { GatewayError } from "../../errors.js";
import { ErrorCode } from "../../protocol/codes.js";
import { guarded } from "../../util/guarded.js";

export type CoreLiveDeps = {
  nc: NatsConnection;
  /** The stream's state and the repairs' urgent reads. */
  reads: RepairReads;
  /** Stream subject (`ev.orders.eu`) to channel (`orders.eu`). */
  toChannel: (subject: string) => string;
  /**
   * Whether a republished message was stored under this feed's stream subjects. Streams share the live
   * subjects (a namespace's republishes under the same prefix as the default stream), so a message a backend
   * published to `ev.chat.x` while `chat` has a stream of its own (stored by the default stream, seq of its
   * numbering) reaches a `chat` feed too: it is not this feed's, and is ignored.
   */
  owns: (subject: string) => boolean;
  log: Logger;
  /** Live messages held at most while a repair reads the stream; beyond it they are read again instead. */
  holdLimit: number;
  /** Counts gaps found and repairs run (metrics). */
  onRepair?: (why: RepairReason) => void;
};

export type RepairReason = "gap" | "reconnect" | "leader" | "overflow";

/** The feeds of a broker connection that want to hear about reconnects, leader changes and a new epoch. */
export type LiveFeedHooks = Set<CoreLiveFeed>;

/** First retry delay of a repair read that failed (broker down, leader election); doubles to 5 s. */
const RETRY_MS = 250;
const RETRY_MAX_MS = 5_000;
/**
 * How far back a repair after a reconnect or a leader change reads. A leader that stored a message (and had
 * it replicated) but died before its republish left, or whose republish was lost with a route, leaves a hole
 * below messages the new leader republishes at once; reading from where the feed was this long ago finds it
 * right away instead of when its channel's next message arrives. Messages the feed has are skipped.
 */
export const RESYNC_LOOKBACK_MS = 5_000;
const MARK_EVERY_MS = 250;
const MARKS = 64;

/** A stored message as the live path sees it: its channel is made only when it is delivered. */
type Core = Omit<StoredMsg, "channel">;
type Live = Core & { prev: number };

/**
 * A worker's live feed of one pattern without a JetStream consumer: one core NATS subscription on the
 * stream's republish subjects (`<live prefix>.<pattern>`). Each message carries its stream sequence and
 * the previous sequence stored on its subject, so every loss of core NATS' at-most-once delivery shows up
 * as a gap on the subject's next message (SubjectSequencer). A gap, a reconnect or a stream leader change
 * starts a repair: live messages are held, the missed ones are read from the stream with direct gets and
 * delivered, then the held ones. The feed delivers every matching message after `startAfter` once, in
 * stream order per channel (a repaired message can follow newer messages of other channels).
 */
export class CoreLiveFeed implements LiveFeed {
  private seqr = new SubjectSequencer(0);
  private sub?: Subscription;
  /** Holding while starting and while repairs run. */
  private holding = true;
  private hold: Live[] = [];
  private readonly repairs: { subject: string; from: number }[] = [];
  private repairing = false;
  private stopped = false;
  /** Highest sequence delivered, or the baseline. */
  private pos = 0;
  /** Where the feed was lately: [time, position] every MARK_EVERY_MS at most, newest last (for resync). */
  private readonly marks = new PositionMarks(MARKS, MARK_EVERY_MS);

  private constructor(
    readonly pattern: string,
    private readonly subject: string,
    private readonly deps: CoreLiveDeps,
    private readonly onMessage: (m: BrokerMessage) => void,
  ) {}

  /**
   * Subscribes to `liveSubject` and takes the stream's last sequence as the baseline: every message after it
   * reaches the subscription (or is repaired). No flush is needed between the two: the stream info request
   * (the coalescer sends one after this call) follows the SUB on the same connection, so the server has the
   * interest before it computes the state, and any message stored after that state is republished to it.
   */
  static async start(
    pattern: string,
    subject: string,
    liveSubject: string,
    deps: CoreLiveDeps,
    hooks: LiveFeedHooks,
    onMessage: (m: BrokerMessage) => void,
  ): Promise<CoreLiveFeed> {
    const feed = new CoreLiveFeed(pattern, subject, deps, onMessage);
    // The server refuses a subject the NATS user may not subscribe to (-ERR, then nats.js passes the error here):
    // the feed would stay silent. It is said at error, and fails the subscribe when it comes before the state.
    let refused: Error | undefined;
    feed.sub = deps.nc.subscribe(liveSubject, {
      callback: guarded("live feed", (err, m) => {
        if (!err) return feed.onCore(m);
        if (refused) return;
        refused = err;
        deps.log.error({ err, subject: liveSubject }, "NATS refused the live subscription (check the NATS user's permissions): no live messages for it");
      }),
    });
    try {
      const st = await deps.reads.state();
      if (refused)
        throw new GatewayError(ErrorCode.BrokerError, `NATS refused the subscription to ${liveSubject}: ${refused.message}`, {
          cause: refused,
          temporary: false,
        });
      feed.begin(st.lastSeq);
    } catch (e) {
      feed.sub.unsubscribe();
      throw e;
    }
    hooks.add(feed);
    feed.hooks = hooks;
    return feed;
  }

  private hooks?: LiveFeedHooks;

  /** Every matching message up to here was delivered, or predates the feed (the baseline). */
  position(): number {
    return this.pos;
  }

  private begin(baseline: number): void {
    this.pos = baseline;
    this.marks.note(baseline);
    this.seqr = new SubjectSequencer(baseline);
    this.release();
  }

  private onCore(m: Msg): void {
    if (this.stopped) return;
    const h = jsHeaders(m);
    if (!h || h.seq === 0 || !this.deps.owns(h.subject)) return;
    const p: Live = { subject: h.subject, seq: h.seq, prev: h.last, ts: h.ts, payload: m.data };
    if (h.type !== undefined) p.type = h.type;
    if (h.publisher !== undefined) p.publisher = h.publisher;
    if (h.tags !== undefined) p.tags = h.tags;
    if (this.holding) return this.holdMsg(p);
    this.process(p);
  }

  private process(p: Live): void {
    const v = this.seqr.check(p.subject, p.seq, p.prev);
    if (v.type === "deliver") return this.deliver(p);
    if (v.type === "old") return;
    this.deps.log.debug({ pattern: this.pattern, subject: p.subject, missedFrom: v.from, seq: p.seq }, "live feed gap; repairing from the stream");
    this.deps.onRepair?.("gap");
    // The missed message is newer than everything delivered: read the whole pattern from there, which keeps
    // stream order. One older than that (a drop noticed late) is read for its subject alone.
    if (p.prev > this.pos) this.repair(this.subject, this.pos + 1);
    else this.repair(v.subject, v.from);
    this.holdMsg(p);
  }

  private deliver(m: Core): void {
    this.seqr.record(m.subject, m.seq);
    if (m.seq > this.pos) {
      this.pos = m.seq;
      this.marks.note(m.seq);
    }
    try {
      const out: BrokerMessage = { channel: this.deps.toChannel(m.subject), seq: m.seq, ts: m.ts, payload: m.payload };
      if (m.type !== undefined) out.type = m.type;
      if (m.publisher !== undefined) out.publisher = m.publisher;
      if (m.tags !== undefined) out.tags = m.tags;
      this.onMessage(out);
    } catch (e) {
      this.deps.log.error({ err: e, pattern: this.pattern }, "live feed callback failed");
    }
  }

  private holdMsg(p: Live): void {
    if (this.hold.length < this.deps.holdLimit) {
      this.hold.push(p);
      return;
    }
    // Too much held: drop it and read it from the stream instead (with everything after it).
    const from = this.hold[0]?.seq ?? p.seq; // a hold limit of 0 holds nothing: read from this message
    this.hold = [];
    this.deps.onRepair?.("overflow");
    this.repair(this.subject, from);
  }

  /** The connection came back or the stream has a new leader: read what may have been missed. */
  resync(why: "reconnect" | "leader"): void {
    if (this.stopped || this.seqr === undefined) return;
    this.deps.onRepair?.(why);
    this.repair(this.subject, Math.min(this.pos, this.marks.at(Date.now() - RESYNC_LOOKBACK_MS)) + 1);
  }

  /** The stream was deleted and created again: sequences start over. */
  restart(baseline: number): void {
    this.marks.clear();
    this.marks.note(baseline);
    this.hold = [];
    this.repairs.length = 0;
    this.pos = baseline;
    this.seqr.reset(baseline);
  }

  private repair(subject: string, from: number): void {
    this.holding = true;
    this.repairs.push({ subject, from });
    if (!this.repairing) void this.runRepairs();
  }

  private async runRepairs(): Promise<void> {
    this.repairing = true;
    try {
      for (let r = this.repairs.shift(); r !== undefined && !this.stopped; r = this.repairs.shift()) await this.read(r);
    } finally {
      this.repairing = false;
    }
    if (!this.stopped && this.repairs.length === 0) this.release();
  }

  /** Reads `subject` from `from` to the stream's end, delivering what the feed has not delivered yet. */
  private async read(r: { subject: string; from: number }): Promise<void> {
    let from = r.from;
    let delay = RETRY_MS;
    while (!this.stopped) {
      let batch;
      try {
        batch = await this.deps.reads.read(r.subject, from);
      } catch (e) {
        if (this.stopped) return; // the feed stopped (unsubscribed, or the worker drains): the read was cut for it
        this.deps.log.warn({ err: e, pattern: this.pattern, from, retryInMs: delay }, "live feed repair read failed; retrying");
        await new Promise((res) => setTimeout(res, delay).unref());
        delay = Math.min(delay * 2, RETRY_MAX_MS);
        continue;
      }
      for (const m of batch.messages) if (this.seqr.fresh(m.subject, m.seq)) this.deliver(m);
      const last = batch.messages.at(-1);
      if (batch.pending === 0 || last === undefined) return;
      from = last.seq + 1;
    }
  }

  /** Back to live: the held messages go through the sequencer (which may find another gap). */
  private release(): void {
    this.holding = false;
    const held = this.hold;
    this.hold = [];
    for (const [i, p] of held.entries()) {
      if (this.holding) {
        for (const rest of held.slice(i)) this.holdMsg(rest);
        return;
      }
      this.process(p);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.hooks?.delete(this);
    this.hold = [];
    this.sub?.unsubscribe();
  }
}

/** A feed's recent positions over time, in a small ring (pure; no timers). */
export class PositionMarks {
  private readonly t: number[] = [];
  private readonly p: number[] = [];
  private last = -Infinity;

  constructor(
    private readonly size: number,
    private readonly everyMs: number,
  ) {}

  /** The position moved to `pos` now; kept when the last mark is older than `everyMs`. */
  note(pos: number, now = Date.now()): void {
    if (now - this.last < this.everyMs) return;
    this.last = now;
    this.t.push(now);
    this.p.push(pos);
    if (this.t.length > this.size) {
      this.t.shift();
      this.p.shift();
    }
  }

  /** The position at time `when`: the newest mark at or before it (the oldest kept when all are later). */
  at(when: number): number {
    let found = this.p[0] ?? Infinity;
    for (const [i, t] of this.t.entries()) {
      if (t > when) break;
      found = this.p[i] ?? found;
    }
    return found;
  }

  clear(): void {
    this.t.length = 0;
    this.p.length = 0;
    this.last = -Infinity;
  }
}
