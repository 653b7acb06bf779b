import type { BackpressureSection } from "../config/sections/index.js";
import { LateGroup, PatternGroups, type LateMember } from "../fanout/groups.js";
import { DeltaSocket } from "../fanout/delta-socket.js";
import { coalescedTopic, codecTopic, feedTopic } from "../fanout/topics.js";
import type { FanoutHub } from "../fanout/hub.js";
import type { Feed } from "../fanout/feed.js";
import { Flow, SubLifecycle, type DeliveryFailure, type Joined, type LifecycleDeps, type SubDoor } from "../fanout/lifecycle.js";
import type { FanoutSocket } from "../fanout/socket.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { clientIdOf, fanoutSocket, sendErr, type Socket, type SubState } from "./session.js";
import type { EventRecorder } from "../events/recorder.js";

/** What the WebSocket side of subscriptions is made of. */
export type SubscriptionsOptions = {
  /** What every subscription's lifecycle needs (the resume path, the broker's state, the log). */
  readonly lifecycle: LifecycleDeps;
  readonly hub: FanoutHub;
  readonly backpressure: BackpressureSection;
  readonly metrics: Metrics;
  readonly log: Logger;
  /** A socket stayed paused past SLOW_CONSUMER_TIMEOUT, or reached the hard cap: close it (4008). */
  readonly onSlow: (ws: Socket) => void;
  /** Records `subscribe` when a subscription starts delivering and `unsubscribe` when it ends. */
  readonly events?: EventRecorder | undefined;
};

/**
 * The WebSocket door of the subscription lifecycle (fanout/lifecycle.ts, which owns every phase transition,
 * the pause and the slow timer): a subscription's registration on its socket, its feed reference and its
 * gauge, and what the lifecycle asks of a WebSocket — joining a feed's uWS topic (the resume path does),
 * leaving it, the pattern's late-repair group, and a failed catch-up as an `err` frame.
 */
export class Subscriptions {
  /** Per pattern, its live subscriptions, for what the feed repairs late. */
  private readonly late = new PatternGroups<LateMember>((feed) => new LateGroup(feed));

  private readonly deps: LifecycleDeps;
  private readonly hub: FanoutHub;
  private readonly backpressure: BackpressureSection;
  private readonly metrics: Metrics;
  private readonly log: Logger;
  private readonly onSlow: (ws: Socket) => void;
  private readonly events?: EventRecorder;

  constructor(o: SubscriptionsOptions) {
    this.deps = o.lifecycle;
    this.hub = o.hub;
    this.backpressure = o.backpressure;
    this.metrics = o.metrics;
    this.log = o.log;
    this.onSlow = o.onSlow;
    this.events = o.events;
  }

  /** The socket's flow (live or paused, for all its subscriptions), made with its first subscription. */
  flowOf(ws: Socket): Flow {
    const s = ws.getUserData();
    s.flow ??= new Flow(() => [...s.subs.values()].map((sub) => sub.life), {
      slowTimeoutMs: this.backpressure.slowTimeoutMs,
      onSlow: () => this.onSlow(ws),
      switches: this.metrics.slowSwitches,
      closed: this.metrics.slowClosed,
    });
    return s.flow;
  }

  /**
   * A new subscription in `starting`, registered on the socket. With `delta` its live delivery is the feed's
   * delta receivers instead of the uWS topic (fanout/delta-socket.ts).
   */
  begin(ws: Socket, pattern: string, delta = false): SubState {
    const topic = codecTopic(feedTopic(pattern), ws.getUserData().codec);
    const deltaReceiver = delta ? new DeltaSocket(fanoutSocket(ws), () => this.hub.get(pattern), this.hub.deltaChannelsPerSubscription) : undefined;
    const socket = deltaReceiver ?? fanoutSocket(ws);
    const flow = this.flowOf(ws);
    const door = new WsSubDoor(this, ws, socket, flow, deltaReceiver);
    const sub: SubState = { pattern, topic, socket, life: new SubLifecycle(pattern, door, this.deps), feedHeld: false, counted: false, covered: 0 };
    door.sub = sub; // the door's methods run only once the subscription started, after this
    ws.getUserData().subs.set(pattern, sub);
    return sub;
  }

  /** The door's `joined`: the subscription joined live to `feed`, and the pattern's late-repair group. */
  lateJoin(feed: Feed, sub: SubState): void {
    this.late.join(feed, sub);
  }

  /** The door's `leaveLive`: out of the late-repair group and off the feed's topics (or its delta receivers). */
  leaveLive(ws: Socket, sub: SubState, deltaReceiver: DeltaSocket | undefined): void {
    this.late.leave(sub.pattern, sub);
    if (deltaReceiver) return deltaReceiver.leave();
    if (sub.socket.closed) return;
    // What the coalesced topic holds was published before the leave (an unsub, a pause for backpressure): it
    // goes out first, so that an unsub's answer follows it and a paused subscription resumes after it.
    if (ws.getUserData().coalesce) {
      this.hub.get(sub.pattern)?.flush();
      ws.unsubscribe(coalescedTopic(sub.topic));
    }
    ws.unsubscribe(sub.topic);
  }

  /** The hub's feed was acquired for `sub`; false (and released) when the subscription ended meanwhile. */
  attach(ws: Socket, sub: SubState): boolean {
    if (sub.life.phase === "ended" || ws.getUserData().closed) {
      this.hub.release(sub.pattern);
      if (sub.life.phase !== "ended") this.end(ws, sub);
      return false;
    }
    sub.feedHeld = true;
    this.counted(ws, sub);
    return true;
  }

  /** A durable subscription started. */
  attachDurable(ws: Socket, sub: SubState): void {
    sub.life.durable();
    this.counted(ws, sub);
  }

  /** The subscription started: counted in `fanout_subscriptions`, and its `subscribe` event recorded. */
  private counted(ws: Socket, sub: SubState): void {
    sub.counted = true;
    this.metrics.subscriptions.inc();
    this.events?.record("subscribe", { user: ws.getUserData().user, client: clientIdOf(ws), transport: "websocket", channel: sub.pattern });
  }

  /** Takes the socket out of live delivery (its buffer is over the threshold). */
  pause(ws: Socket): void {
    this.flowOf(ws).pause();
  }

  /** The socket drained: catch every paused subscription up and return it to live. */
  resume(ws: Socket): void {
    this.flowOf(ws).resume();
  }

  /** Ends one subscription (unsub, failure or socket close); idempotent. The socket may be closed. */
  end(ws: Socket, sub: SubState): void {
    if (sub.life.end() === undefined) return;
    clearTimeout(sub.expiry?.timer);
    const onEnd = sub.onEnd;
    sub.onEnd = undefined;
    onEnd?.();
    const s = ws.getUserData();
    if (s.subs.get(sub.pattern) === sub) s.subs.delete(sub.pattern);
    if (sub.counted) {
      sub.counted = false;
      this.metrics.subscriptions.dec();
      this.events?.record("unsubscribe", { user: s.user, client: clientIdOf(ws), transport: "websocket", channel: sub.pattern });
    }
    if (sub.durable) {
      void sub.durable.stop().catch((e) => this.log.debug({ err: e }, "stopping durable failed"));
      return;
    }
    this.late.leave(sub.pattern, sub);
    if (sub.feedHeld) {
      sub.feedHeld = false;
      this.hub.release(sub.pattern);
    }
  }

  /** A catch-up failed: the subscription ends, and the client is told where to resume. */
  failed(ws: Socket, sub: SubState, f: DeliveryFailure): void {
    this.end(ws, sub);
    sendErr(ws, this.metrics.badFrames, undefined, f.code, `${f.message}; subscribe again with from:{seq:${f.lastSent + 1}}`, f.temporary);
  }
}

/**
 * A WebSocket subscription's door (fanout/lifecycle.ts): one object per subscription with its methods on the
 * prototype. An object literal of four closures cost about 400 bytes of heap per socket (a heap snapshot of
 * 5,000 sockets), which a million sockets feel.
 */
class WsSubDoor implements SubDoor {
  /** Set right after the subscription is made, before the lifecycle can call anything here. */
  sub!: SubState;

  constructor(
    private readonly subs: Subscriptions,
    private readonly ws: Socket,
    readonly socket: FanoutSocket,
    readonly flow: Flow,
    private readonly deltaReceiver: DeltaSocket | undefined,
  ) {}

  joined(end: Joined, feed: Feed): void {
    this.sub.covered = end.covered;
    this.subs.lateJoin(feed, this.sub);
  }

  leaveLive(): void {
    this.subs.leaveLive(this.ws, this.sub, this.deltaReceiver);
  }

  livePosition(feed: Feed): number {
    return feed.position();
  }

  failed(f: DeliveryFailure): void {
    this.subs.failed(this.ws, this.sub, f);
  }
}
