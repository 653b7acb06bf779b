import type { TopicPublisher } from "./socket.js";
import { sendActivity } from "./send-activity.js";
import type { Broker, BrokerMessage } from "../broker/broker.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { DeltaMsg, LiveMsg, type Codec } from "../protocol/codec.js";
import { CODECS } from "../protocol/codecs.js";
import type { MsgMeta } from "../protocol/server-frames.js";
import { ChannelDeltas, DEFAULT_DELTA_LIMITS, type DeltaBounds } from "./deltas.js";
import { ReplayCache, type PageSource } from "./replay-cache.js";
import { scheduleTimeout, type FrameWindow, type Schedule } from "./coalesced-frames.js";
import { ChannelFeed, type Feed, type FeedCoalescing } from "./feed.js";
import { TurnMeter } from "./turn-meter.js";

/** Coalesced frames (PROTOCOL.md "Coalesced frames"): each pattern's window, and the bound of one frame. */
export type CoalescePolicy = {
  /** The window of a pattern's messages in ms; 0: off (one frame per message for every socket). */
  windowOf(pattern: string): number;
  /** A coalesced frame never grows past this many bytes (a frame alone over it goes alone). */
  readonly maxBytes: number;
  readonly schedule?: Schedule;
};

/** What a worker's hub is made of. */
export type FanoutHubOptions = {
  /** Where feeds publish their frames: the uWS topics of the worker's apps. */
  readonly app: TopicPublisher;
  readonly broker: Broker;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** How long a feed without subscribers goes on before it stops (FEED_LINGER). */
  readonly lingerMs: number;
  /** The replay cache's bound in bytes (REPLAY_CACHE_BYTES); 64 MiB when absent. */
  readonly replayCacheBytes?: number;
  /** Publish with compress=true (COMPRESSION on): uWS deflates for each socket that negotiated it. */
  readonly compress?: boolean;
  /** Coalesced frames; absent: off for every pattern. */
  readonly coalesce?: CoalescePolicy;
  /** The `deltas` config section (DELTA_* settings); the defaults when absent. */
  readonly deltas?: DeltaBounds;
};

/**
 * Where a message goes from the broker to sockets: one live feed per distinct pattern per worker (on
 * JetStream a core NATS subscription on the republished messages, on Redis a (P)SUBSCRIBE),
 * created on the first local subscription and stopped a linger period after the last one leaves. Each
 * message is serialized here once per codec whose sockets listen on the pattern (lazily: a codec nobody
 * of the pattern speaks costs nothing), published to that codec's uWS topic (uWS writes it to every
 * socket) and handed down the feed's other routes (fanout/routes.ts) with their seq: the hub knows no transport's format.
 */
export class FanoutHub {
  private readonly feeds = new Map<string, ChannelFeed>();
  /** Pages of stored messages shared by the catch-ups of this worker (brokers that store messages). */
  private readonly cache?: ReplayCache;
  /** The bases of per-channel deltas, one per worker whatever the number of patterns and subscribers. */
  private readonly deltas: ChannelDeltas;
  /** Channels each `delta: "fossil"` subscription of this worker remembers (its `DeltaSocket`'s bound). */
  readonly deltaChannelsPerSubscription: number;

  private readonly app: TopicPublisher;
  private readonly broker: Broker;
  private readonly metrics: Metrics;
  /** The live path's turns: messages per event-loop turn and the time to its socket writes. */
  private readonly turns: TurnMeter;
  private readonly log: Logger;
  private readonly lingerMs: number;
  private readonly compress: boolean;
  private readonly coalesce?: CoalescePolicy;

  constructor(o: FanoutHubOptions) {
    const metrics = o.metrics;
    this.app = o.app;
    this.broker = o.broker;
    this.metrics = metrics;
    this.turns = new TurnMeter(metrics);
    this.log = o.log;
    this.lingerMs = o.lingerMs;
    this.compress = o.compress ?? false;
    this.coalesce = o.coalesce;
    const deltaBounds = o.deltas ?? DEFAULT_DELTA_LIMITS;
    if (o.broker.replay) this.cache = new ReplayCache(o.broker.replay, o.replayCacheBytes ?? 64 * 1_048_576, undefined, o.coalesce?.maxBytes);
    const limits = { ...deltaBounds, jsonTargetsOnly: DEFAULT_DELTA_LIMITS.jsonTargetsOnly };
    this.deltas = new ChannelDeltas(limits, Date.now, { made: () => metrics.deltasMade.inc(), skipped: () => metrics.deltasSkipped.inc() });
    this.deltaChannelsPerSubscription = deltaBounds.maxChannelsPerSubscription;
  }

  get size(): number {
    return this.feeds.size;
  }

  /**
   * Stored messages as pages of frames, shared by every catch-up of the worker; undefined when the broker
   * keeps no history (subscribers then go straight to live).
   */
  get pages(): PageSource | undefined {
    return this.cache;
  }

  /** Local subscribers of `pattern`: the WebSocket subscriptions and SSE streams holding its feed. */
  subscribers(pattern: string): number {
    return this.feeds.get(pattern)?.refs ?? 0;
  }

  /** Every pattern with local subscribers, and how many (a feed lingering without any is left out). */
  *occupancy(): IterableIterator<[pattern: string, subscribers: number]> {
    for (const f of this.feeds.values()) if (f.refs > 0) yield [f.pattern, f.refs];
  }

  get(pattern: string): Feed | undefined {
    return this.feeds.get(pattern);
  }

  /** Takes a reference on the pattern's feed, starting it if needed; resolves once it delivers. */
  async acquire(pattern: string): Promise<Feed> {
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
    const created = new ChannelFeed(pattern, this.coalesceOf(pattern));
    created.ready = this.start(created);
    this.feeds.set(pattern, created);
    await created.ready;
    return created;
  }

  private coalesceOf(pattern: string): FeedCoalescing | undefined {
    const c = this.coalesce;
    if (!c) return undefined;
    const out = (topic: string, codec: Codec, frame: Uint8Array): void => {
      sendActivity.note();
      this.app.publish(topic, frame, codec.binary, this.compress);
    };
    return { windowMs: c.windowOf(pattern), maxBytes: c.maxBytes, schedule: c.schedule ?? scheduleTimeout, out };
  }

  private async start(feed: ChannelFeed): Promise<void> {
    try {
      feed.live = await this.broker.live(feed.pattern, (m) => this.deliver(feed, m));
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

  /**
   * A message down the feed's routes: its codecs' topics (a publish per codec whose topic has sockets), its
   * delta receivers, its coalesced topics' window, then its live listeners; a message repaired late goes to
   * the late receivers instead of the topics. Nothing is built when nobody receives it.
   */
  private deliver(feed: ChannelFeed, m: BrokerMessage): void {
    feed.count++;
    this.metrics.brokerMessages.inc();
    this.turns.message();
    const { routes } = feed;
    const sockets = this.topicSockets(feed);
    const deltaReceivers = routes.of("delta").size;
    const listeners = routes.of("live");
    if (sockets === 0 && deltaReceivers === 0 && listeners.size === 0) return;
    const meta: MsgMeta = { channel: m.channel, pattern: feed.pattern, seq: m.seq, ts: m.ts, type: m.type };
    if (m.publisher !== undefined) meta.publisher = m.publisher;
    if (m.tags !== undefined) meta.tags = m.tags;
    const msg = new LiveMsg(meta, m.payload);
    // The broker's feed moves its position before it hands a message over: one below it was repaired late.
    if (m.seq > 0 && m.seq < feed.position()) {
      for (const r of routes.of("late")) r.onLate(m.seq, msg);
    } else if (sockets + deltaReceivers > 0) {
      if (sockets > 0) this.publish(feed.topics, msg);
      // Delta subscriptions are not coalesced: each gets its frame (delta or full) now, alone.
      if (deltaReceivers > 0) this.deliverDeltas(feed, meta, msg, m.payload);
      if (feed.frameWindow) this.hold(feed, feed.frameWindow, msg);
      this.metrics.framesDelivered.inc(sockets + deltaReceivers);
      this.metrics.deliveryLatency.observe(Math.max(0, Date.now() - m.ts) / 1000);
    }
    for (const l of listeners) l.onLive(m.seq, msg);
  }

  /** The sockets on the feed's topics, plain and coalesced, of every codec. */
  private topicSockets(feed: ChannelFeed): number {
    let n = 0;
    for (const t of feed.topics) n += this.app.numSubscribers(t);
    for (const t of feed.coalescedTopics) n += this.app.numSubscribers(t);
    return n;
  }

  /** The message to each codec's topic that has sockets: one frame per codec, whatever their number. */
  private publish(topics: readonly string[], msg: LiveMsg): void {
    for (const c of CODECS) {
      const t = topics[c.slot] as string;
      if (topics.length > 1 && this.app.numSubscribers(t) === 0) continue;
      sendActivity.note();
      this.app.publish(t, msg.frame(c), c.binary, this.compress);
    }
  }

  /**
   * The message to the feed's delta subscriptions: the channel's delta is made at most once per worker (the
   * first subscription that can take it makes it, every other feed and subscription shares it), its frame
   * once per codec; per subscription only its map of last seqs is read and written.
   */
  private deliverDeltas(feed: ChannelFeed, meta: MsgMeta, msg: LiveMsg, payload: Uint8Array): void {
    const dm = this.deltas.next(meta.channel, meta.seq, payload, meta.type !== undefined);
    const receivers = feed.routes.of("delta");
    let frames: DeltaMsg | undefined;
    let deltas = 0;
    for (const r of receivers) {
      if (r.closed) continue;
      const c = r.codec;
      let frame: Uint8Array;
      if (r.deltas.next(dm) === "delta") {
        frame = (frames ??= new DeltaMsg(meta, dm.baseSeq, dm.delta() as Uint8Array, payload)).frame(c);
        deltas++;
      } else frame = msg.frame(c);
      // Dropped (over the hard cap; the socket is being cut): whatever follows must not be a delta of it.
      if (r.deliver(frame, meta.seq) === 2) r.deltas.restart();
    }
    this.metrics.deltaFrames.labels("delta").inc(deltas);
    this.metrics.deltaFrames.labels("full").inc(receivers.size - deltas);
  }

  /** A message for the feed's coalesced topics, held until its window ends (each codec's, if sockets listen). */
  private hold(feed: ChannelFeed, frameWindow: FrameWindow, msg: LiveMsg): void {
    for (const c of CODECS) if (this.app.numSubscribers(feed.coalescedTopics[c.slot] as string) > 0) frameWindow.add(c, msg.frame(c));
  }

  /** A stream was deleted and created again: cached pages of its patterns are void (feeds start over by themselves). */
  streamRecreated(stream: string): void {
    this.cache?.clearStream(stream);
    // Its seqs start over: no base held may be named by them (every channel's next message is full).
    this.deltas.clear();
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
    feed.frameWindow?.stop();
    feed.routes.clear();
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
