import { isJsonPayload } from "../protocol/serialize.js";
import { createBoundedDelta } from "./fossil-encode.js";

/**
 * Per-channel Fossil deltas (issue 36; PROTOCOL.md "Deltas"): the rules, without sockets or frames. A worker
 * keeps one `ChannelDeltas` (the hub's); each subscription that asked for `delta: "fossil"` keeps one
 * `DeltaSubscription` (its `DeltaSocket`). The hub's per-message path (FanoutHub.deliverDeltas) is:
 *
 *   const m = deltas.next(channel, seq, payload);      // once per message per worker (any number of feeds)
 *   for (const s of feed.deltaSubscriptions)           // O(1) per socket: a map read and write
 *     send(s, s.next(m) === "delta" ? (deltaFrame ??= frameOf(m.delta()!)) : fullFrame);
 *
 * The delta is made at most once per channel and message (the first subscriber that can take it makes it,
 * the others share it), and the frame built from it once too. Catch-up pages stay full messages.
 */

/** The bounds of the per-worker and per-subscription state: the operator's `DELTA_*` settings (config/sections/deltas.ts). */
export type DeltaBounds = {
  /** Channels whose last message a worker keeps as the next base; past it the least recently updated goes. */
  readonly maxChannels: number;
  /** Payload bytes kept over all channels (each holds its last two messages, and the older one's base until its delta is made). */
  readonly maxBytes: number;
  /** A channel without a message for this long is forgotten (its next message is full for everyone). */
  readonly idleMs: number;
  /** Larger payloads are always sent full (no base kept): a delta's cost grows with the payload. */
  readonly maxPayloadBytes: number;
  /** Channels one subscription remembers (a wildcard's); past it the oldest is forgotten (its next is full). */
  readonly maxChannelsPerSubscription: number;
  /**
   * The encoder's work allowed per byte of base plus payload (fossil-encode.ts); a delta that would cost more
   * is not made and the message goes full. Bounds the CPU one crafted payload costs a worker (issue 41).
   */
  readonly workPerByte: number;
};

/** What a worker counts of its deltas (metrics). */
export type DeltaCounters = {
  /** A delta was computed (`fanout_deltas_made_total`). */
  made(): void;
  /** The encoder gave up past its work bound; the message went full (`fanout_deltas_skipped_total`). */
  skipped(): void;
};

/** The bounds, and which payloads may be delta targets (a protocol rule, not a setting). */
export type DeltaLimits = DeltaBounds & {
  /**
   * Deltas only for payloads that are one JSON value, the JSON protocol's rule (a delta frame's result is
   * always JSON there). A binary codec may carry deltas of any payload.
   */
  readonly jsonTargetsOnly: boolean;
};

export const DEFAULT_DELTA_LIMITS: DeltaLimits = Object.freeze({
  maxChannels: 10_000,
  maxBytes: 64 * 1_048_576,
  idleMs: 10 * 60_000,
  maxPayloadBytes: 256 * 1_024,
  maxChannelsPerSubscription: 1_000,
  workPerByte: 8,
  jsonTargetsOnly: true,
});

/**
 * One message of one channel as delta subscribers get it: the payload, and the seq of the channel's message
 * before it on this worker (`baseSeq`, 0 when there is none). Made once per message per worker.
 */
export class DeltaMessage {
  private base: Uint8Array | undefined;
  private made = false;
  private memo: Uint8Array | undefined;

  constructor(
    readonly channel: string,
    readonly seq: number,
    readonly payload: Uint8Array,
    readonly baseSeq: number,
    base: Uint8Array | undefined,
    private readonly limits: Pick<DeltaLimits, "jsonTargetsOnly" | "workPerByte">,
    /** Told at most once per message: the delta was made, or skipped past the work bound. */
    private readonly counters?: DeltaCounters,
  ) {
    this.base = base;
  }

  /** Bytes of the base held until the delta is made (the channel's memory bound counts them). */
  get heldBaseBytes(): number {
    return this.base?.length ?? 0;
  }

  /**
   * The Fossil delta from the base to this payload, made on the first call and shared after; undefined when
   * there is no base, the payload may not be a delta target, the delta would cost more than the work bound,
   * or it is not smaller than the payload (then everyone gets the full message).
   */
  delta(): Uint8Array | undefined {
    if (this.made) return this.memo;
    this.made = true;
    const base = this.base;
    this.base = undefined;
    if (base === undefined || (this.limits.jsonTargetsOnly && !isJsonPayload(this.payload))) return undefined;
    const d = createBoundedDelta(base, this.payload, this.limits.workPerByte * (base.length + this.payload.length));
    if (d === undefined) {
      this.counters?.skipped();
      return undefined;
    }
    this.counters?.made();
    this.memo = d.length < this.payload.length ? d : undefined;
    return this.memo;
  }
}

type ChannelState = { current: DeltaMessage; previous?: DeltaMessage; at: number; bytes: number };

/**
 * A worker's last messages per channel, the bases of the next deltas. Several feeds (patterns) of the
 * worker may hand it the same message: each gets the same `DeltaMessage`, so the delta is made once.
 * Bounded by channel count, bytes and idleness; a forgotten channel's next message is simply full.
 */
export class ChannelDeltas {
  private readonly channels = new Map<string, ChannelState>();
  private bytes = 0;

  constructor(
    private readonly limits: DeltaLimits = DEFAULT_DELTA_LIMITS,
    private readonly now: () => number = Date.now,
    /** Told of each delta made or skipped (metrics). */
    private readonly counters?: DeltaCounters,
  ) {}

  /** Channels held, and their payload bytes (for a gauge). */
  get size(): { channels: number; bytes: number } {
    return { channels: this.channels.size, bytes: this.bytes };
  }

  /**
   * The message `seq` of `channel`, with its base: the channel's previous message on this worker. `binary`:
   * a binary payload (published with a content type), never a delta (its frame says bytes, a delta's result is
   * data), but the base of the channel's next message as any payload is.
   */
  next(channel: string, seq: number, payload: Uint8Array, binary = false): DeltaMessage {
    const st = this.channels.get(channel);
    if (st) {
      if (seq === st.current.seq) return st.current;
      if (seq === st.previous?.seq) return st.previous;
      // Older than what the channel holds (a repair, or another feed late): full, and the base stays.
      if (seq < st.current.seq) return this.message(channel, seq, payload, undefined);
    }
    // Over maxPayloadBytes: neither kept as a base nor made a delta (its cost grows with the payload).
    const kept = payload.length <= this.limits.maxPayloadBytes;
    const m = this.message(channel, seq, kept ? payload.slice() : payload, binary || !kept ? undefined : st?.current);
    if (st) this.drop(channel, st);
    // Held: this payload, the previous one (this one's base), and the previous one's base while its delta is unmade.
    const bytes = m.payload.length + (st ? st.current.payload.length + st.current.heldBaseBytes : 0);
    if (kept) this.keep(channel, { current: m, previous: st?.current, at: this.now(), bytes });
    this.evict();
    return m;
  }

  /** Forgets every channel: a stream was recreated (its seqs start over), or the worker stops. */
  clear(): void {
    this.channels.clear();
    this.bytes = 0;
  }

  /** Forgets channels idle past `idleMs` (a timer may call it; `next` does it as it goes). */
  sweep(): void {
    const cutoff = this.now() - this.limits.idleMs;
    for (const [channel, st] of this.channels) {
      if (st.at > cutoff) break; // insertion order is update order: the rest are newer
      this.drop(channel, st);
    }
  }

  private message(channel: string, seq: number, payload: Uint8Array, base: DeltaMessage | undefined): DeltaMessage {
    const usable = base !== undefined && base.seq < seq;
    return new DeltaMessage(channel, seq, payload, usable ? base.seq : 0, usable ? base.payload : undefined, this.limits, this.counters);
  }

  private keep(channel: string, st: ChannelState): void {
    this.channels.set(channel, st);
    this.bytes += st.bytes;
  }

  private drop(channel: string, st: ChannelState): void {
    this.channels.delete(channel);
    this.bytes -= st.bytes;
  }

  private evict(): void {
    this.sweep();
    for (const [channel, st] of this.channels) {
      if (this.channels.size <= this.limits.maxChannels && this.bytes <= this.limits.maxBytes) break;
      this.drop(channel, st);
    }
  }
}

/**
 * One `delta: "fossil"` subscription's view: the last seq it was sent per channel. A delta goes only to a
 * subscription whose last message of the channel is the delta's base; everything else gets the full message.
 * `restart` (a resume, an epoch change, a take-over) makes the next message of every channel full. Frames
 * sent past it (a catch-up's pages, its held live messages) need a `restart()` when the subscription joins
 * live; one missed anyway costs a full message or, at worst, the client's base check (frames name their
 * base seq) and a resubscribe, never wrong data.
 */
export class DeltaSubscription {
  private readonly last = new Map<string, number>();

  constructor(private readonly maxChannels = DEFAULT_DELTA_LIMITS.maxChannelsPerSubscription) {}

  /** What to send this subscription for `m`, recorded as sent: O(1). */
  next(m: DeltaMessage): "delta" | "full" {
    const last = this.last.get(m.channel);
    const kind = last !== undefined && m.baseSeq !== 0 && last === m.baseSeq && m.delta() !== undefined ? "delta" : "full";
    if (last === undefined && this.last.size >= this.maxChannels) {
      const oldest = this.last.keys().next().value;
      if (oldest !== undefined) this.last.delete(oldest);
    }
    this.last.set(m.channel, m.seq);
    return kind;
  }

  /** The subscription starts over (resume, epoch change, take-over): the next message of each channel is full. */
  restart(): void {
    this.last.clear();
  }

  /** Channels remembered (at most the bound). */
  get channels(): number {
    return this.last.size;
  }
}
