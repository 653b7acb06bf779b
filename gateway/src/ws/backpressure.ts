import type { BackpressureSection } from "../config/sections/index.js";
import type { Subscriptions } from "./subscriptions.js";
import type { Logger } from "../log.js";
import { CloseCode } from "../protocol/codes.js";
import { endSocket, type Socket } from "./session.js";
import { sendActivity } from "../fanout/send-activity.js";

const SWEEP_MS = 100;

/**
 * Keeps slow sockets from growing without bound. uWS publishes to topics without telling which socket
 * skipped a message, so the gateway watches buffers itself: a socket whose buffer crosses
 * `backpressureBytes` leaves its live topics (no more memory is spent on it), remembering the last seq it
 * was sent; when it drains below half the threshold it is caught up from the stream and rejoins (on a
 * broker without history the missed deliveries are counted as dropped instead). What a pause does, and the
 * slow timer, are the socket's `Flow` (fanout/lifecycle.ts): a socket still paused after
 * `slowConsumerTimeoutMs`, or over the hard cap at all, is closed with 4008 so that the client reconnects
 * and resumes.
 */
export class BackpressureMonitor {
  private timer?: NodeJS.Timeout;
  /** sendActivity's count at the last walk, and whether that walk found a socket paused or still buffering. */
  private sendsSeen = -1;
  private busy = true;

  constructor(
    private readonly sockets: Set<Socket>,
    private readonly subs: Subscriptions,
    private readonly config: BackpressureSection,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.sweep(), SWEEP_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /**
   * Walks the sockets: pauses those over the bound, cuts paused ones over the hard cap, resumes drained ones.
   * Skipped when nothing was sent since the last walk and that walk found every buffer empty and nobody paused:
   * buffers only grow by sends, so there is nothing to find (an idle worker's sockets cost nothing here).
   */
  sweep(): void {
    const sends = sendActivity.count;
    if (!this.busy && sends === this.sendsSeen) return;
    this.sendsSeen = sends;
    let busy = false;
    for (const ws of this.sockets) {
      const s = ws.getUserData();
      const flow = s.flow;
      if (!flow || (s.subs.size === 0 && !flow.paused)) continue;
      const buffered = ws.getBufferedAmount();
      if (buffered > 0 || flow.paused) busy = true;
      if (!flow.paused) {
        if (buffered > this.config.bytes) this.pause(ws);
      } else if (buffered >= this.config.maxBytes) {
        flow.cut();
      } else if (buffered <= this.config.bytes / 2) {
        this.subs.resume(ws);
      }
    }
    this.busy = busy;
  }

  /** uWS drain callback: rejoin live delivery as soon as the buffer is low again. */
  /** A socket's buffer drained: wakes what waits for room (below an eighth of the bound), resumes a paused socket (below half). */
  onDrain(ws: Socket): void {
    const s = ws.getUserData();
    if (s.drainWaiters.length > 0 && ws.getBufferedAmount() <= this.config.bytes >> 3) {
      const waiters = s.drainWaiters;
      s.drainWaiters = [];
      for (const w of waiters) w();
    }
    if (s.flow?.paused && !s.closed && ws.getBufferedAmount() <= this.config.bytes / 2) this.subs.resume(ws);
  }

  pause(ws: Socket): void {
    this.subs.pause(ws);
    if (this.log.isLevelEnabled("debug")) this.log.debug({ socket: ws.getUserData().id }, "slow socket paused");
  }

  /** The socket stayed slow (its flow was cut): close it with 4008, so that the client reconnects and resumes. */
  closeSlow(ws: Socket): void {
    const s = ws.getUserData();
    this.log.info({ socket: s.id, buffered: ws.getBufferedAmount() }, "closing slow socket");
    endSocket(ws, CloseCode.SlowConsumer, "slow consumer: reconnect and resume");
    // A peer that reads nothing never completes the close handshake; cut it after a grace period.
    const t = setTimeout(() => {
      if (!s.closed) ws.close();
    }, 5_000);
    t.unref();
  }
}
