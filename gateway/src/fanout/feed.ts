import type { LiveFeed } from "../broker/broker.js";
import type { Codec } from "../protocol/codec.js";
import { FrameWindow, type Schedule } from "./coalesced-frames.js";
import { DeliveryRoutes, type Routes } from "./routes.js";
import type { FanoutSocket } from "./socket.js";
import { coalescedTopic, codecTopics, feedTopic } from "./topics.js";

/** A worker's live feed of one channel pattern, as its users see it (the hub owns it). */
export interface Feed {
  readonly pattern: string;
  /** uWS topic the feed publishes to; WebSockets join it, or its codec's (fanout/topics.ts). */
  readonly topic: string;
  /** Messages fanned out so far (a broker without history counts what a paused receiver missed with it). */
  readonly count: number;
  /**
   * Every matching message up to this seq has been fanned out, or is older than the feed. The broker's live
   * feed owns the number; this reads it.
   */
  position(): number;
  /** Where receivers join the feed's delivery besides its topics: live listeners, late receivers, delta receivers. */
  readonly routes: Routes;
  /**
   * `sock` joins live delivery: what the feed holds for its coalesced topics goes out first (to the sockets
   * already there), then the socket joins its codec's topic, the coalesced one if it reads coalesced frames.
   */
  join(sock: FanoutSocket): void;
  /** What the feed holds for its coalesced topics goes out now (before a socket leaves them). */
  flush(): void;
}

/** How a feed coalesces (PROTOCOL.md "Coalesced frames"), and where its coalesced frames go. */
export type FeedCoalescing = { windowMs: number; maxBytes: number; schedule: Schedule; out: (topic: string, codec: Codec, frame: Uint8Array) => void };

/** One pattern's feed: its references, its broker feed, its routes. Only the hub holds it. */
export class ChannelFeed implements Feed {
  readonly topic: string;
  /** The topic of each codec, at its slot. */
  readonly topics: readonly string[];
  refs = 1;
  count = 0;
  ready: Promise<void> = Promise.resolve();
  live?: LiveFeed;
  linger?: NodeJS.Timeout;
  readonly routes = new DeliveryRoutes();
  /** Holds the frames of the coalesced topics (one per codec) during a window; undefined when the window is off. */
  readonly frameWindow?: FrameWindow;
  readonly coalescedTopics: readonly string[] = [];

  constructor(
    readonly pattern: string,
    coalesce: FeedCoalescing | undefined,
  ) {
    this.topic = feedTopic(pattern);
    this.topics = codecTopics(this.topic);
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

  position(): number {
    return this.live?.position() ?? 0;
  }
}
