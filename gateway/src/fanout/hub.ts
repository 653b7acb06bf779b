import type { FanoutSocket, TopicPublisher } from "./socket.js";
import type { Broker, BrokerMessage, LiveFeed } from "../broker/broker.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { codecTopic, DeltaMsg, LiveMsg, type Codec, type MsgFrames } from "../protocol/codec.js";
import { CODECS } from "../protocol/codecs.js";
import type { MsgMeta } from "../protocol/server-frames.js";
import { ChannelDeltas, DEFAULT_DELTA_LIMITS, type DeltaBounds, type DeltaSubscription } from "./deltas.js";
import { ReplayCache, type PageSource } from "./replay-cache.js";
import { FrameWindow, coalescedTopic, scheduleTimeout, type Schedule } from "./coalesced-frames.js";

/** Coalesced frames (PROTOCOL.md "Coalesced frames"): each pattern's window, and the bound of one frame. */
export type CoalescePolicy = {
  /** The window of a pattern's messages in ms; 0: off (one frame per message for every socket). */
  windowOf(pattern: string): number;
  /** A coalesced frame never grows past this many bytes (a frame alone over it goes alone). */
  readonly maxBytes: number;
  readonly schedule?: Schedule;
};

/**
 * Something that sees every live message of a feed besides the uWS topics: a catch-up (which holds them
 * until it joins), or a transport whose receivers are not uWS sockets (the SSE side encodes each message
 * once for all its streams of the pattern). `msg` holds the message's `msg` frames, built once per message
 * per worker and codec, on first use.
 */
export interface LiveListener {
  onLive(seq: number, msg: MsgFrames): void;
}

/**
 * The WebSockets of a feed's topic, for the messages the topic cannot carry: one the live feed repaired late
 * (older than messages it fanned out since). A socket that joined after a catch-up may have had it from the
 * stream already, so each socket is asked, not the whole topic.
 */
export interface LateReceiver {
  onLate(seq: number, msg: MsgFrames): void;
}

/**
 * A `delta: "fossil"` subscription in live delivery (fanout/delta-socket.ts): the hub sends it each message's
 * one delta frame or one full frame, as its `deltas` say, instead of publishing to it through the topic.
 */
export interface DeltaReceiver {
  readonly codec: FanoutSocket["codec"];
  readonly closed: boolean;
  readonly deltas: DeltaSubscription;
  /** Sends a live message's frame (uWS semantics: 1 sent, 0 buffered, 2 dropped). */
  deliver(frame: Uint8Array, seq: number): number;
}

/** A worker's live feed of one channel pattern, as its users see it (the hub owns it). */
export interface Feed {
  readonly pattern: string;
  /** uWS topic the feed publishes to; WebSockets join it, or its codec's (`codecTopic`). */
  readonly topic: string;
  /** Messages fanned out so far (a broker without history counts what a paused receiver missed with it). */
  readonly count: number;
  /**
   * Every matching message up to this seq has been fanned out, or is older than the feed. The broker's live
   * feed owns the number; this reads it.
   */
  position(): number;
  /** `l` sees every live message from now on, until removed. */
  addListener(l: LiveListener): void;
  removeListener(l: LiveListener): void;
  /** `r` gets the messages delivered late, which the topic does not (LateReceiver). */
  addLateReceiver(r: LateReceiver): void;
  removeLateReceiver(r: LateReceiver): void;
  /** A `delta: "fossil"` subscription joins live delivery (instead of the topic) until removed. */
  addDeltaReceiver(r: DeltaReceiver): void;
  removeDeltaReceiver(r: DeltaReceiver): void;
  /**
   * `sock` joins live delivery: what the feed holds for its coalesced topics goes out first (to the sockets
   * already there), then the socket joins its codec's topic, the coalesced one if it reads coalesced frames.
   */
  join(sock: FanoutSocket): void;
  /** What the feed holds for its coalesced topics goes out now (before a socket leaves them). */
  flush(): void;
}

export const topicOf = (pattern: string): string => `p:${pattern}`;

/** One pattern's feed: its references, its broker feed, its listeners. Only the hub holds it. */
class ChannelFeed implements Feed {
  readonly topic: string;
  /** The topic of each codec, at its slot. */
  readonly topics: readonly string[];
  refs = 1;
  count = 0;
  ready: Promise<void> = Promise.resolve();
  live?: LiveFeed;
  linger?: NodeJS.Timeout;
  readonly listeners = new Set<LiveListener>();
  readonly lateReceivers = new Set<LateReceiver>();
  readonly deltaReceivers = new Set<DeltaReceiver>();
  /** Holds the frames of the coalesced topics (one per codec) during a window; undefined when the window is off. */
  readonly frameWindow?: FrameWindow;
  readonly coalescedTopics: readonly string[] = [];

  constructor(
    readonly pattern: string,
    coalesce: { windowMs: number; maxBytes: number; schedule: Schedule; out: (topic: string, codec: Codec, frame: Uint8Array) => void } | undefined,
  ) {
    this.topic = topicOf(pattern);
    this.topics = CODECS.map((c) => codecTopic(this.topic, c));
    if (coalesce && coalesce.windowMs > 0) {
      const topics = this.topics.map(coalescedTopic);
      this.coalescedTopics = topics;
      this.frameWindow = new FrameWindow(coalesce.windowMs, coalesce.maxBytes, (c, f) => coalesce.out(topics[c.slot] as string, c, f), coalesce.schedule);
    }
  }

  join(sock: FanoutSocket): void {
    // Only the coalesced topics hold messages: a socket joining a plain one cannot get one from before its join.
    if (sock.coalesce === true) this.frameWindow?.flush();
    sock.joinTopic(this.topic, this.frameWindow !== undefined);
  }

  flush(): void {
    this.frameWindow?.flush();
  }

  addLateReceiver(r: LateReceiver): void {
    this.lateReceivers.add(r);
  }

  removeLateReceiver(r: LateReceiver): void {
    this.lateReceivers.delete(r);
  }

  addDeltaReceiver(r: DeltaReceiver): void {
    this.deltaReceivers.add(r);
  }

  removeDeltaReceiver(r: DeltaReceiver): void {
    this.deltaReceivers.delete(r);
  }

  position(): number {
    return this.live?.position() ?? 0;
  }

  addListener(l: LiveListener): void {
    this.listeners.add(l);
  }

  removeListener(l: LiveListener): void {
    this.listeners.delete(l);
  }
}

/**
 * Where a message goes from the broker to sockets: one live feed per distinct pattern per worker (on
 * JetStream a core NATS subscription on the republished messages, on Redis a (P)SUBSCRIBE),
 * created on the first local subscription and stopped a linger period after the last one leaves. Each
 * message is serialized here once per codec whose sockets listen on the pattern (lazily: a codec nobody
 * of the pattern speaks costs nothing), published to that codec's uWS topic (uWS writes it to every
 * socket) and handed to the feed's listeners with their seq: the hub knows no transport's format.
 */
export class FanoutHub {
  private readonly feeds = new Map<string, ChannelFeed>();
  /** Pages of stored messages shared by the catch-ups of this worker (brokers that store messages). */
  private readonly cache?: ReplayCache;
  /** The bases of per-channel deltas, one per worker whatever the number of patterns and subscribers. */
  private readonly deltas: ChannelDeltas;
  /** Channels each `delta: "fossil"` subscription of this worker remembers (its `DeltaSocket`'s bound). */
  readonly deltaChannelsPerSubscription: number;

  constructor(
    private readonly app: TopicPublisher,
    private readonly broker: Broker,
    private readonly metrics: Metrics,
    private readonly log: Logger,
    private readonly lingerMs: number,
    replayCacheBytes = 64 * 1_048_576,
    /** Publish with compress=true (COMPRESSION on): uWS deflates for each socket that negotiated it. */
    private readonly compress = false,
    private readonly coalesce?: CoalescePolicy,
    /** The `deltas` config section (DELTA_* settings). */
    deltaBounds: DeltaBounds = DEFAULT_DELTA_LIMITS,
  ) {
    if (broker.replay) this.cache = new ReplayCache(broker.replay, replayCacheBytes, undefined, coalesce?.maxBytes);
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

  private coalesceOf(pattern: string): ConstructorParameters<typeof ChannelFeed>[1] {
    const c = this.coalesce;
    if (!c) return undefined;
    const out = (topic: string, codec: Codec, frame: Uint8Array): void => {
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

  private deliver(feed: ChannelFeed, m: BrokerMessage): void {
    feed.count++;
    this.metrics.brokerMessages.inc();
    const topics = feed.topics;
    let receivers = 0;
    for (const t of topics) receivers += this.app.numSubscribers(t);
    for (const t of feed.coalescedTopics) receivers += this.app.numSubscribers(t);
    const deltaReceivers = feed.deltaReceivers.size;
    if (receivers === 0 && deltaReceivers === 0 && feed.listeners.size === 0) return;
    const meta: MsgMeta = { channel: m.channel, pattern: feed.pattern, seq: m.seq, ts: m.ts, type: m.type };
    const msg = new LiveMsg(meta, m.payload);
    // The broker's feed moves its position before it hands a message over: one below it was repaired late.
    if (m.seq > 0 && m.seq < feed.position()) {
      for (const r of feed.lateReceivers) r.onLate(m.seq, msg);
    } else if (receivers + deltaReceivers > 0) {
      if (receivers > 0) {
        for (const c of CODECS) {
          const t = topics[c.slot] as string;
          if (topics.length > 1 && this.app.numSubscribers(t) === 0) continue;
          this.app.publish(t, msg.frame(c), c.binary, this.compress);
        }
      }
      // Delta subscriptions are not coalesced: each gets its frame (delta or full) now, alone.
      if (deltaReceivers > 0) this.deliverDeltas(feed, meta, msg, m.payload);
      if (feed.frameWindow) this.hold(feed, feed.frameWindow, msg);
      this.metrics.framesDelivered.inc(receivers + deltaReceivers);
      this.metrics.deliveryLatency.observe(Math.max(0, Date.now() - m.ts) / 1000);
    }
    for (const l of feed.listeners) l.onLive(m.seq, msg);
  }

  /**
   * The message to the feed's delta subscriptions: the channel's delta is made at most once per worker (the
   * first subscription that can take it makes it, every other feed and subscription shares it), its frame
   * once per codec; per subscription only its map of last seqs is read and written.
   */
  private deliverDeltas(feed: ChannelFeed, meta: MsgMeta, msg: LiveMsg, payload: Uint8Array): void {
    const dm = this.deltas.next(meta.channel, meta.seq, payload, meta.type !== undefined);
    let frames: DeltaMsg | undefined;
    let deltas = 0;
    for (const r of feed.deltaReceivers) {
      if (r.closed) continue;
      const c = r.codec;
      let frame: Uint8Array;
      if (r.deltas.next(dm) === "delta") {
        frame = (frames ??= new DeltaMsg(meta, dm.baseSeq, dm.delta() as Uint8Array)).frame(c);
        deltas++;
      } else frame = msg.frame(c);
      // Dropped (over the hard cap; the socket is being cut): whatever follows must not be a delta of it.
      if (r.deliver(frame, meta.seq) === 2) r.deltas.restart();
    }
    this.metrics.deltaFrames.labels("delta").inc(deltas);
    this.metrics.deltaFrames.labels("full").inc(feed.deltaReceivers.size - deltas);
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
    feed.listeners.clear();
    feed.deltaReceivers.clear();
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
