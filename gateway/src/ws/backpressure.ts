import type { BackpressureSection } from "../config/sections.js";
import type { Subscriptions } from "./subscriptions.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { CloseCode } from "../protocol/codes.js";
import type { Socket } from "./session.js";

const SWEEP_MS = 100;

/**
 * Keeps slow sockets from growing without bound. uWS publishes to topics without telling which socket
 * skipped a message, so the gateway watches buffers itself: a socket whose buffer crosses
 * `backpressureBytes` leaves its live topics (no more memory is spent on it), remembering the last seq it
 * was sent; when it drains below half the threshold it is caught up from the stream and rejoins (on a
 * broker without history the missed deliveries are counted as dropped instead). A socket
 * still over the threshold after `slowConsumerTimeoutMs`, or over the hard cap at all, is closed with 4008
 * so that the client reconnects and resumes.
 */
export class BackpressureMonitor {
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly sockets: Set<Socket>,
    private readonly subs: Subscriptions,
    private readonly config: BackpressureSection,
    private readonly metrics: Metrics,
    private readonly log: Logger,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.sweep(), SWEEP_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  sweep(): void {
    const now = Date.now();
    for (const ws of this.sockets) {
      const s = ws.getUserData();
      if (s.subs.size === 0 && !s.paused) continue;
      const buffered = ws.getBufferedAmount();
      if (!s.paused) {
        if (buffered > this.config.bytes) this.pause(ws);
      } else if (buffered >= this.config.maxBytes || now - s.pausedSince > this.config.slowTimeoutMs) {
        this.closeSlow(ws, buffered);
      } else if (buffered <= this.config.bytes / 2) {
        this.resume(ws);
      }
    }
  }

  /** uWS drain callback: rejoin live delivery as soon as the buffer is low again. */
  onDrain(ws: Socket): void {
    const s = ws.getUserData();
    if (s.paused && !s.closed && ws.getBufferedAmount() <= this.config.bytes / 2) this.resume(ws);
  }

  pause(ws: Socket): void {
    this.subs.pause(ws);
    if (this.log.isLevelEnabled("debug")) this.log.debug({ socket: ws.getUserData().id }, "slow socket paused");
  }

  resume(ws: Socket): void {
    this.subs.resume(ws);
  }

  private closeSlow(ws: Socket, buffered: number): void {
    const s = ws.getUserData();
    this.metrics.slowClosed.inc();
    this.log.info({ socket: s.id, buffered }, "closing slow socket");
    s.paused = false;
    ws.end(CloseCode.SlowConsumer, "slow consumer: reconnect and resume");
    // A peer that reads nothing never completes the close handshake; cut it after a grace period.
    const t = setTimeout(() => {
      if (!s.closed) ws.close();
    }, 5_000);
    t.unref();
  }
}
