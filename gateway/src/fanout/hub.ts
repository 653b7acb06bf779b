import type { TopicPublisher } from "./socket.js";
import type { Broker, BrokerMessage, LiveFeed } from "../broker/broker.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { msgFrame } from "../protocol/serialize.js";
import { ReplayCache } from "./replay-cache.js";
import { sseEventOf } from "../sse/event.js";

/** Something that sees every live message of a feed before it joins the topic (a catch-up). */
export interface LiveListener {
  onLive(seq: number, frame: Buffer): void;
}

/**
 * A live receiver that is not a uWS socket (an SSE stream). It gets the SSE events of the messages that
 * arrived in one turn of the event loop together: `seqs[i]` and its `events[i]`, built once per message per
 * feed, and `joined`, all of them in one buffer, built once per batch, so that a stream takes one write per
 * batch rather than one per message.
 */
export interface StreamListener {
  onEvents(seqs: readonly number[], events: readonly Buffer[], joined: Buffer): void;
}

type SseBatch = { seqs: number[]; events: Buffer[] };

/** The worker's live feed for one channel pattern, shared by every local socket subscribed to it. */
export type ChannelFeed = {
  readonly pattern: string;
  /** uWS topic the feed publishes to; sockets subscribe to it. */
  readonly topic: string;
  refs: number;
  /** Messages fanned out so far, and the seq of the last one (for backpressure accounting and catch-up). */
  count: number;
  lastSeq: number;
  /** Every matching message with seq <= startAfter is older than the feed. */
  startAfter: number;
  ready: Promise<void>;
  live?: LiveFeed;
  /** Sockets replaying this pattern, waiting to join the topic; they see each live message too. */
  catchups: Set<LiveListener>;
  /** Live SSE streams of this pattern (uWS topics only hold WebSockets). */
  streams: Set<StreamListener>;
  /** Events waiting for the end of this turn, when the streams get them. */
  sseBatch?: SseBatch;
  linger?: NodeJS.Timeout;
};

export const topicOf = (pattern: string): string => `p:${pattern}`;

/**
 * Where a message goes from the broker to sockets: one live feed per distinct pattern per worker (on
 * JetStream a core NATS subscription on the republished messages, on Redis a (P)SUBSCRIBE),
 * created on the first local subscription and stopped a linger period after the last one leaves. Each
 * message is serialized once here and published to the pattern's uWS topic; uWS writes it to every socket.
 */
export class FanoutHub {
  private readonly feeds = new Map<string, ChannelFeed>();
  /** Pages of stored messages shared by the catch-ups of this worker (brokers that store messages). */
  readonly cache?: ReplayCache;

  constructor(
    private readonly app: TopicPublisher,
    private readonly broker: Broker,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly lingerMs: number,
    replayCacheBytes = 64 * 1_048_576,
    /** Publish with compress=true (COMPRESSION on): uWS deflates for each socket that negotiated it. */
    private readonly compress = false,
  ) {
    if (broker.replay) this.cache = new ReplayCache(broker.replay, replayCacheBytes);
  }

  get size(): number {
    return this.feeds.size;
  }

  get(pattern: string): ChannelFeed | undefined {
    return this.feeds.get(pattern);
  }

  /** Takes a reference on the pattern's feed, starting it if needed; resolves once it delivers. */
  async acquire(pattern: string): Promise<ChannelFeed> {
    const feed = this.feeds.get(pattern);
    if (feed) {
      if (feed.linger) {
        clearTimeout(feed.linger);
        feed.linger = undefined;
      }
      feed.refs++;
      try {
        await feed.ready;
      } catch (e) {
        feed.refs--;
        throw e;
      }
      return feed;
    }
    const created: ChannelFeed = {
      pattern,
      topic: topicOf(pattern),
      refs: 1,
      count: 0,
      lastSeq: 0,
      startAfter: 0,
      ready: Promise.resolve(),
      catchups: new Set(),
      streams: new Set(),
    };
    created.ready = this.start(created);
    this.feeds.set(pattern, created);
    await created.ready;
    return created;
  }

  private async start(feed: ChannelFeed): Promise<void> {
    try {
      feed.live = await this.broker.live(feed.pattern, (m) => this.deliver(feed, m));
      feed.startAfter = feed.live.startAfter ?? 0;
      this.metrics.liveFeeds.inc();
      if (this.feeds.get(feed.pattern) !== feed || feed.refs === 0) {
        // Everyone left while it was starting.
        if (feed.refs === 0) this.scheduleStop(feed);
      }
    } catch (e) {
      if (this.feeds.get(feed.pattern) === feed) this.feeds.delete(feed.pattern);
      this.log.warn({ err: e, pattern: feed.pattern }, "live feed could not start");
      throw e;
    }
  }

  private deliver(feed: ChannelFeed, m: BrokerMessage): void {
    feed.count++;
    if (m.seq > feed.lastSeq) feed.lastSeq = m.seq;
    this.metrics.brokerMessages.inc();
    const receivers = this.app.numSubscribers(feed.topic);
    const streams = feed.streams.size;
    if (receivers === 0 && feed.catchups.size === 0 && streams === 0) return;
    const frame = msgFrame({ channel: m.channel, pattern: feed.pattern, seq: m.seq, ts: m.ts }, m.payload);
    if (receivers > 0) {
      this.app.publish(feed.topic, frame, false, this.compress);
      this.metrics.framesDelivered.inc(receivers);
      this.metrics.deliveryLatency.observe(Math.max(0, Date.now() - m.ts) / 1000);
    }
    if (streams > 0) {
      let b = feed.sseBatch;
      if (!b) {
        b = feed.sseBatch = { seqs: [], events: [] };
        queueMicrotask(() => this.flushStreams(feed));
      }
      b.seqs.push(m.seq);
      b.events.push(sseEventOf(frame, m.seq, this.broker.epoch));
    }
    for (const c of feed.catchups) c.onLive(m.seq, frame);
  }

  /** Hands the turn's events to the feed's SSE streams; a stream that joined meanwhile skips what it has. */
  private flushStreams(feed: ChannelFeed): void {
    const b = feed.sseBatch;
    feed.sseBatch = undefined;
    if (!b || feed.streams.size === 0) return;
    const joined = b.events.length === 1 ? b.events[0]! : Buffer.concat(b.events);
    this.metrics.framesDelivered.inc(feed.streams.size * b.seqs.length);
    for (const l of feed.streams) l.onEvents(b.seqs, b.events, joined);
  }

  /** Where the feed is: every matching message up to this seq has been fanned out (or predates it). */
  static position(feed: ChannelFeed): number {
    return Math.max(feed.lastSeq, feed.startAfter);
  }

  /** The stream was deleted and created again: positions and cached pages of the old one are void. */
  streamRecreated(): void {
    this.cache?.clear();
    for (const f of this.feeds.values()) {
      f.lastSeq = 0;
      f.startAfter = f.live?.startAfter ?? 0;
    }
  }

  /** Drops a reference; the feed stops after the linger period if nobody takes it again. */
  release(pattern: string): void {
    const feed = this.feeds.get(pattern);
    if (!feed || feed.refs === 0) return;
    feed.refs--;
    if (feed.refs === 0) this.scheduleStop(feed);
  }

  private scheduleStop(feed: ChannelFeed): void {
    if (feed.linger) clearTimeout(feed.linger);
    feed.linger = setTimeout(() => {
      feed.linger = undefined;
      if (feed.refs > 0 || this.feeds.get(feed.pattern) !== feed) return;
      this.feeds.delete(feed.pattern);
      void this.stopFeed(feed);
    }, this.lingerMs);
    feed.linger.unref();
  }

  private async stopFeed(feed: ChannelFeed): Promise<void> {
    this.cache?.forget(feed.pattern);
    if (!feed.live) return;
    this.metrics.liveFeeds.dec();
    await feed.live.stop().catch((e) => this.log.debug({ err: e, pattern: feed.pattern }, "stopping live feed failed"));
  }

  async stopAll(): Promise<void> {
    const all = [...this.feeds.values()];
    this.feeds.clear();
    for (const f of all) if (f.linger) clearTimeout(f.linger);
    await Promise.all(all.map((f) => this.stopFeed(f)));
  }
}
