import { brokerFailure, GatewayError } from "../errors.js";
import type { Logger } from "../log.js";
import { ErrorCode } from "../protocol/codes.js";
import type { Feed } from "./feed.js";
import type { Delivery, DeliveryEnd, Resume } from "./resume.js";
import type { FanoutSocket } from "./socket.js";

/**
 * Where a subscription is in its life. starting → (catchup → live | live | paused | durable) → … → ended;
 * live and catchup go to paused when the receiver is slow, and back through a catch-up when it drained.
 * `ended` is final: ending twice is a no-op.
 */
export type SubPhase =
  /** The broker side is starting (feed, start position); an unsub meanwhile ends it. */
  | "starting"
  /** Replaying stored messages before joining live delivery. */
  | "catchup"
  /** Joined to the feed's live delivery. */
  | "live"
  /** Out of delivery (slow receiver); resumes after `resumeAfter`. */
  | "paused"
  /** Durable (acked) subscription: per-socket delivery from a JetStream durable consumer, outside this machine. */
  | "durable"
  | "ended";

/** A catch-up that failed, as every door reports it (the door only words it in its own wire format). */
export type DeliveryFailure = {
  code: ErrorCode;
  message: string;
  temporary: boolean;
  /** The receiver has every message up to here: a new subscription resumes after it. */
  lastSent: number;
};

/** The joined end of a delivery: what a door needs to tell late repairs from what it already wrote. */
export type Joined = Extract<DeliveryEnd, { type: "joined" }>;

/**
 * What a door supplies to the lifecycle of one of its subscriptions: how it joins and leaves live delivery
 * (a uWS topic, or the pattern's SSE group) and how it writes a failure. Nothing here decides a transition.
 */
export interface SubDoor {
  /** The receiver the resume path writes catch-ups to (its `joinTopic` joins live delivery). */
  readonly socket: FanoutSocket;
  /** The receiver's flow: one slow subscription pauses every subscription of the receiver. */
  readonly flow: Flow;
  /** Joined live to `feed` (the resume path joined its topic): `end.covered` tells late repairs apart. */
  joined(end: Joined, feed: Feed): void;
  /** Leaves live delivery (the subscription pauses or ends while live). */
  leaveLive(): void;
  /** The last seq a live subscription was given, for where it resumes after a pause. */
  livePosition(feed: Feed): number;
  /** A catch-up failed: write `f` and end the subscription (the lifecycle ends it too, once). */
  failed(f: DeliveryFailure): void;
}

/** What every subscription's lifecycle shares in a worker. */
export type LifecycleDeps = {
  /** The resume path every door shares (catch-up, then live). */
  resume: Resume;
  /** Whether the broker is connected now (a failure while it is not is `broker_unavailable`). */
  connected: () => boolean;
  log: Logger;
};

/**
 * The one owner of a subscription's phase, for every door: starts it (live, or a catch-up through the resume
 * path), parks it while its receiver is slow and resumes it after its last message, turns a failed catch-up
 * into one `DeliveryFailure`, and ends it, exactly once. The door (`SubDoor`) only joins, leaves and writes.
 */
export class SubLifecycle {
  private phase_: SubPhase = "starting";
  private feed?: Feed;
  private delivery?: Delivery;
  /** While paused: the last seq the receiver was given, and the feed's count then. */
  private resumeAfter_ = 0;
  private pausedAtCount = 0;

  constructor(
    readonly pattern: string,
    private readonly door: SubDoor,
    private readonly deps: LifecycleDeps,
  ) {}

  get phase(): SubPhase {
    return this.phase_;
  }

  /** While paused: where delivery resumes (after this seq). */
  get resumeAfter(): number {
    return this.resumeAfter_;
  }

  /**
   * Starts delivery from `feed`: after `lastSent` (stored messages, then live), or live from the feed's
   * position when it is undefined. Returns the seq a live start joined at; a start while the receiver is
   * paused parks (and returns the position a live start will continue from).
   */
  start(feed: Feed, lastSent?: number): number | undefined {
    if (this.phase_ === "ended") return undefined;
    this.feed = feed;
    if (this.door.flow.paused) {
      const at = lastSent ?? feed.position();
      this.park(at);
      return lastSent === undefined ? at : undefined;
    }
    let joinedAt: number | undefined;
    const d = this.deps.resume.prepare(this.door.socket, feed, lastSent, (end) => {
      if (lastSent === undefined && end.type === "joined") joinedAt = end.lastSent;
      this.onDeliveryEnd(d, end);
    });
    this.phase_ = "catchup";
    this.delivery = d;
    d.start();
    return joinedAt;
  }

  /** A durable subscription started: its delivery is its consumer's, not this machine's. */
  durable(): void {
    if (this.phase_ === "starting") this.phase_ = "durable";
  }

  /** The receiver is slow (its flow paused): out of live delivery, remembering where it was. */
  pause(): void {
    if (this.phase_ === "catchup") {
      this.delivery?.suspend(); // parks it through onDeliveryEnd
    } else if (this.phase_ === "live" && this.feed) {
      this.door.leaveLive();
      this.park(this.door.livePosition(this.feed));
    }
  }

  /** The receiver drained: catch up from where it paused, then live again. */
  resume(): void {
    if (this.phase_ !== "paused" || !this.feed) return;
    this.start(this.feed, this.deps.resume.afterPause(this.feed, this.resumeAfter_, this.pausedAtCount));
  }

  /** Ends the subscription (unsub, failure, close); the phase it was in, or undefined when it had ended already. */
  end(): SubPhase | undefined {
    const was = this.phase_;
    if (was === "ended") return undefined;
    this.phase_ = "ended";
    this.delivery?.abort();
    this.delivery = undefined;
    if (was === "live") this.door.leaveLive();
    return was;
  }

  private park(resumeAfter: number): void {
    this.phase_ = "paused";
    this.resumeAfter_ = resumeAfter;
    this.pausedAtCount = this.feed?.count ?? 0;
  }

  private onDeliveryEnd(d: Delivery, end: DeliveryEnd): void {
    if (this.delivery !== d || this.phase_ !== "catchup") return;
    this.delivery = undefined;
    if (this.door.socket.closed) return;
    if (end.type === "joined") {
      this.phase_ = "live";
      if (this.feed) this.door.joined(end, this.feed);
    } else if (end.type === "suspended") {
      this.park(end.lastSent);
      this.door.flow.pause();
    } else {
      this.door.failed(this.failure(end.error, end.lastSent));
      this.end();
    }
  }

  /** The one mapping of a failed catch-up to a wire error, whichever door it reaches. */
  private failure(error: unknown, lastSent: number): DeliveryFailure {
    const slow = error instanceof GatewayError && error.code === ErrorCode.SlowConsumer;
    if (slow) this.deps.log.debug({ err: error, pattern: this.pattern }, "catch-up ended: slow reader");
    else this.deps.log.warn({ err: error, pattern: this.pattern }, "catch-up failed");
    const f = brokerFailure(error, this.deps.connected(), `replay of ${this.pattern}`);
    return { code: f.code, message: f.message, temporary: f.temporary, lastSent };
  }
}

/** What a flow needs: its limits and what to do with a receiver that stayed slow. */
export type FlowOptions = {
  /** Still paused after this long, the receiver is cut (SLOW_CONSUMER_TIMEOUT). */
  slowTimeoutMs: number;
  /** The receiver stayed slow: cut it (it reconnects and resumes). */
  onSlow: () => void;
  /** Counts each pause (`fanout_slow_consumer_switches_total`) and each cut (`…_closed_total`). */
  switches?: { inc(): void };
  closed?: { inc(): void };
};

/**
 * One receiver's flow control (a WebSocket with all its subscriptions, or one SSE stream): live, or paused
 * because its buffer is over the threshold. Every subscription of the receiver pauses and resumes together;
 * the slow timer starts with the pause, and a receiver still paused when it fires is cut. The door decides
 * when (it watches its buffer); this decides what follows.
 */
export class Flow {
  private paused_ = false;
  private since_ = 0;
  private stopped = false;
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly subs: () => Iterable<SubLifecycle>,
    private readonly opts: FlowOptions,
  ) {}

  get paused(): boolean {
    return this.paused_;
  }

  /** When the current pause began (ms since the epoch); 0 when live. */
  get since(): number {
    return this.paused_ ? this.since_ : 0;
  }

  /** Out of live delivery: every subscription parks after what it was given. Idempotent. */
  pause(): void {
    if (this.paused_ || this.stopped) return;
    this.paused_ = true;
    this.since_ = Date.now();
    for (const sub of [...this.subs()]) sub.pause();
    this.opts.switches?.inc();
    this.timer = setTimeout(() => this.slow(), this.opts.slowTimeoutMs);
    this.timer.unref();
  }

  /** Drained: every parked subscription catches up and returns to live. */
  resume(): void {
    if (!this.paused_ || this.stopped) return;
    this.paused_ = false;
    clearTimeout(this.timer);
    for (const sub of [...this.subs()]) sub.resume();
  }

  /** The receiver is going away (cut, closed, ended): no more pauses, resumes or timers. */
  stop(): void {
    this.stopped = true;
    this.paused_ = false;
    clearTimeout(this.timer);
  }

  /** The receiver must be cut now (its buffer reached the hard cap), as when the slow timer fires. */
  cut(): void {
    if (this.stopped) return;
    this.stop();
    this.opts.closed?.inc();
    this.opts.onSlow();
  }

  private slow(): void {
    if (this.paused_) this.cut();
  }
}
