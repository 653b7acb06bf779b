import type { Broker, ReaderPosition } from "../broker/broker.js";
import type { Config } from "../config/config.js";
import { CatchUp, type CatchUpEnd } from "../fanout/catchup.js";
import { FanoutHub, type ChannelFeed } from "../fanout/hub.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { ErrorCode } from "../protocol/codes.js";
import { errFrame } from "../protocol/serialize.js";
import { sendText, type Socket, type SubState } from "./session.js";

/**
 * The life of a socket's subscriptions: live (joined to the feed's topic), catching up (replay, then
 * join), paused for backpressure and resumed — by replaying from the last seq sent when the broker stores
 * messages, or by rejoining and counting the missed deliveries as dropped when it does not (Redis).
 */
export class Subscriptions {
  constructor(
    private readonly config: Config,
    private readonly broker: Broker,
    private readonly hub: FanoutHub,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  /** A live-only subscription whose feed is ready. */
  startLive(ws: Socket, sub: SubState, feed: ChannelFeed): void {
    if (ws.getUserData().paused) {
      sub.resumeAfter = FanoutHub.position(feed);
      sub.pausedAtCount = feed.count;
      return;
    }
    ws.subscribe(sub.topic);
    sub.joined = true;
  }

  /** Replays from `position` (everything after `lastSent`), then joins live. */
  startCatchUp(ws: Socket, sub: SubState, feed: ChannelFeed, position: ReaderPosition, lastSent: number): void {
    const replay = this.broker.replay;
    if (!replay) return this.startLive(ws, sub, feed);
    const c = new CatchUp(ws, sub, feed, replay, { bufferLimit: this.config.catchupBufferMessages, backpressureBytes: this.config.backpressureBytes }, this.log, lastSent, (end) => this.onCatchUpEnd(ws, sub, end));
    sub.catchup = c;
    void c.start(position);
  }

  private onCatchUpEnd(ws: Socket, sub: SubState, end: CatchUpEnd): void {
    sub.catchup = undefined;
    const s = ws.getUserData();
    if (s.closed || sub.cancelled) return;
    if (end.type === "joined") {
      sub.joined = true;
    } else if (end.type === "suspended") {
      sub.resumeAfter = end.lastSent;
      if (!s.paused) this.pause(ws);
    } else {
      this.log.warn({ err: end.error, pattern: sub.pattern }, "catch-up failed");
      s.subs.delete(sub.pattern);
      this.release(ws, sub);
      sendText(ws, errFrame(undefined, this.broker.isConnected() ? ErrorCode.BrokerError : ErrorCode.BrokerUnavailable, `replay of ${sub.pattern} failed; subscribe again with from:{seq:${end.lastSent + 1}}`));
    }
  }

  /** Takes the socket out of live delivery (its buffer is over the threshold). */
  pause(ws: Socket): void {
    const s = ws.getUserData();
    s.paused = true;
    s.pausedSince = Date.now();
    for (const sub of s.subs.values()) {
      if (sub.pending || sub.durable) continue;
      if (sub.catchup) {
        sub.catchup.suspend(); // sets resumeAfter through onCatchUpEnd
        continue;
      }
      if (!sub.joined) continue;
      ws.unsubscribe(sub.topic);
      sub.joined = false;
      const feed = this.hub.get(sub.pattern);
      sub.resumeAfter = feed ? FanoutHub.position(feed) : sub.resumeAfter;
      sub.pausedAtCount = feed?.count ?? 0;
    }
    this.metrics.slowSwitches.inc();
  }

  /** The socket drained: catch every paused subscription up and return it to live. */
  resume(ws: Socket): void {
    const s = ws.getUserData();
    s.paused = false;
    for (const sub of s.subs.values()) {
      if (sub.pending || sub.durable || sub.joined || sub.catchup) continue;
      const feed = this.hub.get(sub.pattern);
      if (!feed) continue;
      if (this.broker.replay) {
        this.startCatchUp(ws, sub, feed, { seq: sub.resumeAfter + 1 }, sub.resumeAfter);
      } else {
        const missed = feed.count - sub.pausedAtCount;
        if (missed > 0) this.metrics.deliveriesDropped.inc(missed);
        ws.subscribe(sub.topic);
        sub.joined = true;
      }
    }
  }

  /** Ends one subscription (unsub or socket close); the socket may already be closed. */
  release(ws: Socket, sub: SubState): void {
    if (sub.pending) {
      sub.cancelled = true;
      return;
    }
    sub.cancelled = true;
    this.metrics.subscriptions.dec();
    if (sub.durable) {
      void sub.durable.stop().catch((e) => this.log.debug({ err: e }, "stopping durable failed"));
      return;
    }
    sub.catchup?.abort();
    sub.catchup = undefined;
    if (sub.joined && !ws.getUserData().closed) ws.unsubscribe(sub.topic);
    sub.joined = false;
    this.hub.release(sub.pattern);
  }
}
