import type { Feed, LiveListener } from "../fanout/hub.js";
import type { Metrics } from "../metrics/metrics.js";
import { sseEventOf } from "./event.js";

/**
 * A live SSE stream of a pattern. It gets the events of the messages that arrived in one turn of the event
 * loop together: `seqs[i]` and its `events[i]`, built once per message per worker, and `joined`, all of them
 * in one buffer, built once per batch, so that a stream takes one write per batch rather than one per message.
 */
export interface SseReceiver {
  onEvents(seqs: readonly number[], events: readonly Buffer[], joined: Buffer): void;
}

/** The live streams of one pattern: one listener of the hub's feed for all of them. */
class Group implements LiveListener {
  readonly streams = new Set<SseReceiver>();
  private seqs: number[] = [];
  private events: Buffer[] = [];
  private pending = false;

  constructor(
    readonly feed: Feed,
    private readonly metrics: Metrics,
    private readonly epoch: () => string | undefined,
  ) {}

  onLive(seq: number, frame: Buffer): void {
    if (!this.pending) {
      this.pending = true;
      queueMicrotask(() => this.flush());
    }
    this.seqs.push(seq);
    this.events.push(sseEventOf(frame, seq, this.epoch()));
  }

  /** Hands the turn's events to the streams; a stream that joined meanwhile skips what it has. */
  private flush(): void {
    const { seqs, events } = this;
    this.pending = false;
    this.seqs = [];
    this.events = [];
    if (seqs.length === 0 || this.streams.size === 0) return;
    const joined = (events.length === 1 ? events[0] : undefined) ?? Buffer.concat(events);
    this.metrics.framesDelivered.inc(this.streams.size * seqs.length);
    for (const s of this.streams) s.onEvents(seqs, events, joined);
  }
}

/**
 * The worker's live SSE delivery. uWS topics hold only WebSockets, so SSE streams are listeners of the
 * hub's feeds, grouped per pattern: each message's event is encoded here once for every stream of its
 * pattern (the hub hands out `msg` frames and seqs only), and a stream joins or leaves its group.
 */
export class SseLive {
  private readonly groups = new Map<string, Group>();

  constructor(
    private readonly metrics: Metrics,
    /** A reader of the current epoch of a pattern's stream, which event ids carry (routed once per group). */
    private readonly epochReader: (pattern: string) => () => string | undefined,
  ) {}

  /** `s` gets every live message of `feed` from now on. */
  join(feed: Feed, s: SseReceiver): void {
    let g = this.groups.get(feed.pattern);
    if (!g || g.feed !== feed) {
      if (g) g.feed.removeListener(g);
      g = new Group(feed, this.metrics, this.epochReader(feed.pattern));
      this.groups.set(feed.pattern, g);
      feed.addListener(g);
    }
    g.streams.add(s);
  }

  leave(pattern: string, s: SseReceiver): void {
    const g = this.groups.get(pattern);
    if (!g || !g.streams.delete(s) || g.streams.size > 0) return;
    g.feed.removeListener(g);
    this.groups.delete(pattern);
  }

  get size(): number {
    return this.groups.size;
  }
}
