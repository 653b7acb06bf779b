import type { Broker } from "../broker/broker.js";
import { topicOf, type FanoutHub, type Feed } from "../fanout/hub.js";
import type { Delivery, DeliveryEnd, Resume } from "../fanout/resume.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { brokerFailure, GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import { errFrame } from "../protocol/serialize.js";
import { fanoutSocket, newSub, sendText, type Socket, type SubState } from "./session.js";
import { LateSockets } from "./late-sockets.js";

/**
 * The one owner of a subscription's life (`SubState.phase`): starting, live (joined to the feed's topic),
 * catching up (replay, then join), paused for backpressure and resumed — by replaying from the last seq
 * sent when the broker stores messages, or by rejoining and counting the missed deliveries as dropped when
 * it does not (Redis) — and ended, exactly once. Where delivery starts and how it reaches live is the
 * resume path's (fanout/resume.ts), shared with SSE; this class keeps the WebSocket's side of it.
 */
export class Subscriptions {
  /** Per pattern, its live subscriptions, for what the feed repairs late. */
  private readonly late = new Map<string, LateSockets>();

  constructor(
    private readonly path: Resume,
    private readonly broker: Broker,
    private readonly hub: FanoutHub,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  /** A new subscription in `starting`, registered on the socket. */
  begin(ws: Socket, pattern: string): SubState {
    const sub = newSub(pattern, topicOf(pattern));
    ws.getUserData().subs.set(pattern, sub);
    return sub;
  }

  /** The hub's feed was acquired for `sub`; false (and released) when the subscription ended meanwhile. */
  attach(ws: Socket, sub: SubState): boolean {
    if (sub.phase === "ended" || ws.getUserData().closed) {
      this.hub.release(sub.pattern);
      if (sub.phase !== "ended") this.end(ws, sub);
      return false;
    }
    sub.feedHeld = true;
    sub.counted = true;
    this.metrics.subscriptions.inc();
    return true;
  }

  /** A durable subscription started. */
  attachDurable(sub: SubState): void {
    sub.phase = "durable";
    sub.counted = true;
    this.metrics.subscriptions.inc();
  }

  /**
   * Starts delivery once the feed is ready: after `lastSent` (stored messages, then live), or live from the
   * feed's position when it is undefined. Returns the seq a live start joined at (undefined otherwise, or
   * when the socket is paused and the subscription waits).
   */
  start(ws: Socket, sub: SubState, feed: Feed, lastSent?: number): number | undefined {
    if (ws.getUserData().paused) {
      const at = lastSent ?? feed.position();
      this.park(sub, at, feed.count);
      return lastSent === undefined ? at : undefined;
    }
    let joinedAt: number | undefined;
    const d = this.path.prepare(fanoutSocket(ws), feed, lastSent, (end) => {
      if (lastSent === undefined && end.type === "joined") joinedAt = end.lastSent;
      this.onDeliveryEnd(ws, sub, d, end);
    });
    sub.phase = "catchup";
    sub.delivery = d;
    d.start();
    return joinedAt;
  }

  private park(sub: SubState, resumeAfter: number, count: number): void {
    sub.phase = "paused";
    sub.resumeAfter = resumeAfter;
    sub.pausedAtCount = count;
  }

  private onDeliveryEnd(ws: Socket, sub: SubState, d: Delivery, end: DeliveryEnd): void {
    if (sub.delivery !== d || sub.phase !== "catchup") return;
    sub.delivery = undefined;
    const s = ws.getUserData();
    if (s.closed) return;
    if (end.type === "joined") {
      sub.phase = "live";
      sub.covered = end.covered;
      this.joinLate(ws, sub);
    } else if (end.type === "suspended") {
      this.park(sub, end.lastSent, this.hub.get(sub.pattern)?.count ?? 0);
      if (!s.paused) this.pause(ws);
    } else {
      if (end.error instanceof GatewayError && end.error.code === ErrorCode.SlowConsumer)
        this.log.debug({ err: end.error, pattern: sub.pattern }, "catch-up ended: slow reader");
      else this.log.warn({ err: end.error, pattern: sub.pattern }, "catch-up failed");
      this.end(ws, sub);
      const f = brokerFailure(end.error, this.broker.isConnected(), `replay of ${sub.pattern}`);
      sendText(ws, errFrame(undefined, f.code, `${f.message}; subscribe again with from:{seq:${end.lastSent + 1}}`, f.temporary));
    }
  }

  /** Takes the socket out of live delivery (its buffer is over the threshold). */
  pause(ws: Socket): void {
    const s = ws.getUserData();
    s.paused = true;
    s.pausedSince = Date.now();
    for (const sub of s.subs.values()) {
      if (sub.phase === "catchup") {
        sub.delivery?.suspend(); // parks it through onDeliveryEnd
      } else if (sub.phase === "live") {
        ws.unsubscribe(sub.topic);
        this.leaveLate(sub);
        const feed = this.hub.get(sub.pattern);
        this.park(sub, feed ? feed.position() : sub.resumeAfter, feed?.count ?? 0);
      }
    }
    this.metrics.slowSwitches.inc();
  }

  /** The socket drained: catch every paused subscription up and return it to live. */
  resume(ws: Socket): void {
    const s = ws.getUserData();
    s.paused = false;
    for (const sub of s.subs.values()) {
      if (sub.phase !== "paused") continue;
      const feed = this.hub.get(sub.pattern);
      if (!feed) continue;
      this.start(ws, sub, feed, this.path.afterPause(feed, sub.resumeAfter, sub.pausedAtCount));
    }
  }

  /** Ends one subscription (unsub, failure or socket close); idempotent. The socket may be closed. */
  end(ws: Socket, sub: SubState): void {
    if (sub.phase === "ended") return;
    const was = sub.phase;
    sub.phase = "ended";
    const onEnd = sub.onEnd;
    sub.onEnd = undefined;
    onEnd?.();
    const s = ws.getUserData();
    if (s.subs.get(sub.pattern) === sub) s.subs.delete(sub.pattern);
    if (sub.counted) {
      sub.counted = false;
      this.metrics.subscriptions.dec();
    }
    if (sub.durable) {
      void sub.durable.stop().catch((e) => this.log.debug({ err: e }, "stopping durable failed"));
      return;
    }
    sub.delivery?.abort();
    sub.delivery = undefined;
    this.leaveLate(sub);
    if (was === "live" && !s.closed) ws.unsubscribe(sub.topic);
    if (sub.feedHeld) {
      sub.feedHeld = false;
      this.hub.release(sub.pattern);
    }
  }

  private joinLate(ws: Socket, sub: SubState): void {
    const feed = this.hub.get(sub.pattern);
    if (!feed) return;
    let g = this.late.get(sub.pattern);
    if (!g || g.feed !== feed) {
      g?.feed.removeLateReceiver(g);
      g = new LateSockets(feed);
      this.late.set(sub.pattern, g);
      feed.addLateReceiver(g);
    }
    g.subs.set(sub, ws);
  }

  private leaveLate(sub: SubState): void {
    const g = this.late.get(sub.pattern);
    if (!g?.subs.delete(sub) || g.subs.size > 0) return;
    g.feed.removeLateReceiver(g);
    this.late.delete(sub.pattern);
  }
}
