import type { ConsumerMessages } from "@nats-io/jetstream";
import type { Logger } from "../log.js";
import type { BrokerMessage, LiveFeed } from "./broker.js";

/** An ordered consumer delivering one pattern from `startSeq`, as JetStreamBroker.orderedFeed opens it. */
export type OpenOrdered = (startSeq: number, onMessage: (m: BrokerMessage) => void) => Promise<LiveFeed & { messages: ConsumerMessages }>;

/** Live feeds that want to hear about broker reconnects. */
export type ReconnectHooks = Set<{ reconnected(): void }>;

/** How long a live feed may see neither a message nor a server heartbeat before its consumer is replaced. */
export const LIVE_STALL_MS = 6_000;
/** Server heartbeat interval of live consumers: well under LIVE_STALL_MS. */
export const LIVE_HEARTBEAT_MS = 2_000;
/** Delay before another attempt when a replacement failed (e.g. the stream is still electing a leader). */
const RETRY_MS = 1_000;

/**
 * A live feed that outlives the server holding its consumer. An ordered consumer is an R1 consumer on one
 * server (the one the create request reached, usually the one the gateway is connected to). When that server
 * dies, nats.js 3.4 neither recreates the consumer nor reports it (after the reconnect its consumer-info check
 * keeps timing out), so the feed would stall until that node returns — for ever if it does not. This feed
 * replaces its consumer with one starting right after the last delivered seq after every broker reconnect, and
 * whenever neither a message nor a heartbeat arrived for `stallMs`. Messages at or below the last delivered seq
 * are dropped, so the overlap of the old and new consumer yields no duplicate and no gap.
 */
export class ResilientLiveFeed implements LiveFeed {
  private current?: LiveFeed & { messages: ConsumerMessages };
  private active = 0;
  private nextGen = 1;
  private lastActivity = Date.now();
  private replacing = false;
  private stopped = false;
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly pattern: string,
    private last: number,
    private readonly open: OpenOrdered,
    private readonly onMessage: (m: BrokerMessage) => void,
    private readonly hooks: ReconnectHooks,
    private readonly log: Logger,
    private readonly stallMs: number,
  ) {
    this.timer = setInterval(() => {
      if (Date.now() - this.lastActivity > stallMs) void this.replace("no message or heartbeat");
    }, Math.min(RETRY_MS, stallMs / 3));
    this.timer.unref();
  }

  /** Starts delivering every matching message with seq > `after`. */
  static async start(pattern: string, after: number, open: OpenOrdered, onMessage: (m: BrokerMessage) => void, hooks: ReconnectHooks, log: Logger, stallMs = LIVE_STALL_MS): Promise<ResilientLiveFeed> {
    const feed = new ResilientLiveFeed(pattern, after, open, onMessage, hooks, log, stallMs);
    try {
      feed.current = await feed.openNext();
    } catch (e) {
      clearInterval(feed.timer);
      throw e;
    }
    hooks.add(feed);
    return feed;
  }

  private async openNext(): Promise<LiveFeed & { messages: ConsumerMessages }> {
    const gen = this.nextGen++;
    const next = await this.open(this.last + 1, (m) => {
      if (gen !== this.active || m.seq <= this.last) return;
      this.last = m.seq;
      this.lastActivity = Date.now();
      this.onMessage(m);
    });
    this.active = gen;
    this.lastActivity = Date.now();
    void (async () => {
      for await (const s of next.messages.status()) {
        if (s.type === "heartbeat" && gen === this.active) this.lastActivity = Date.now();
      }
    })().catch(() => undefined);
    return next;
  }

  reconnected(): void {
    void this.replace("broker reconnected");
  }

  private async replace(why: string): Promise<void> {
    if (this.replacing || this.stopped) return;
    this.replacing = true;
    const old = this.current;
    try {
      const next = await this.openNext();
      this.current = next;
      if (this.stopped) {
        await next.stop();
        return;
      }
      this.log.warn({ pattern: this.pattern, why, after: this.last }, "live feed consumer replaced");
      // The old consumer's server may be gone: its deletion is not waited for.
      void old?.stop().catch(() => undefined);
    } catch (e) {
      // The stall timer tries again shortly.
      this.lastActivity = Date.now() - this.stallMs + RETRY_MS;
      this.log.warn({ err: e, pattern: this.pattern, why }, "live feed consumer could not be replaced yet");
    } finally {
      this.replacing = false;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.hooks.delete(this);
    await this.current?.stop();
  }
}
