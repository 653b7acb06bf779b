import { PatternGroups, type PatternGroup } from "../fanout/groups.js";
import type { Feed } from "../fanout/feed.js";
import type { LiveListener } from "../fanout/routes.js";
import type { Metrics } from "../metrics/metrics.js";
import { sseEventOf } from "./event.js";
import type { MsgFrames } from "../protocol/codec.js";
import { JSON_CODEC } from "../protocol/codecs.js";

/**
 * A live SSE stream of a pattern. It gets the events of the messages that arrived in one turn of the event
 * loop together: `seqs[i]` and its `events[i]`, built once per message per worker, and `joined`, all of them
 * in one buffer, built once per batch, so that a stream takes one write per batch rather than one per message.
 */
export interface SseReceiver {
  onEvents(seqs: readonly number[], events: readonly Buffer[], joined: Buffer): void;
}

/** The live streams of one pattern: one listener of the hub's feed for all of them. */
class Group implements PatternGroup<SseReceiver>, LiveListener {
  readonly members = new Set<SseReceiver>();
  private seqs: number[] = [];
  private events: Buffer[] = [];
  private pending = false;
  private detachLive?: () => void;

  constructor(
    readonly feed: Feed,
    private readonly metrics: Metrics,
    private readonly epoch: () => string | undefined,
  ) {}

  attach(): void {
    this.detachLive = this.feed.routes.add("live", this);
  }

  detach(): void {
    this.detachLive?.();
  }

  onLive(seq: number, msg: MsgFrames): void {
    if (!this.pending) {
      this.pending = true;
      queueMicrotask(() => this.flush());
    }
    this.seqs.push(seq);
    this.events.push(sseEventOf(msg.frame(JSON_CODEC), seq, this.epoch()));
  }

  /** Hands the turn's events to the streams; a stream that joined meanwhile skips what it has. */
  private flush(): void {
    const { seqs, events } = this;
    this.pending = false;
    this.seqs = [];
    this.events = [];
    if (seqs.length === 0 || this.members.size === 0) return;
    const joined = (events.length === 1 ? events[0] : undefined) ?? Buffer.concat(events);
    this.metrics.framesDelivered.inc(this.members.size * seqs.length);
    for (const s of this.members) s.onEvents(seqs, events, joined);
  }
}

/**
 * The worker's live SSE delivery. uWS topics hold only WebSockets, so SSE streams are listeners of the
 * hub's feeds, grouped per pattern (fanout/groups.ts): each message's event is encoded here once for every
 * stream of its pattern (the hub hands out `msg` frames and seqs only), and a stream joins or leaves its group.
 */
export type SseLive = PatternGroups<SseReceiver>;

/** `epochReader`: a reader of the current epoch of a pattern's stream, which event ids carry (routed once per group). */
export function sseLive(metrics: Metrics, epochReader: (pattern: string) => () => string | undefined): SseLive {
  return new PatternGroups<SseReceiver>((feed: Feed) => new Group(feed, metrics, epochReader(feed.pattern)));
}
