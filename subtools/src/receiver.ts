// The per-message path shared by all client kinds: latency into the current window, sequence
// accounting per (client, publisher), end markers. One Receiver per process.
import { LatencyStats, nowUs } from "./stats.js";
import { SeqTracker } from "./seq-tracker.js";
import { scanned, scanPayload, scanGatewayFrame } from "./frame.js";

/** What one subscriber remembers: a tracker per publisher (with a one-entry cache for the usual case). */
export class ClientState {
  readonly trackers = new Map<string, SeqTracker>();
  private lastP = "";
  private lastTracker: SeqTracker | null = null;
  /** Subscribed on every channel right now. */
  subscribed = false;
  /** Was subscribed at least once. */
  everSubscribed = false;

  tracker(p: string, fromOne: boolean): SeqTracker {
    if (p === this.lastP && this.lastTracker) return this.lastTracker;
    let t = this.trackers.get(p);
    if (!t) { t = new SeqTracker(fromOne); this.trackers.set(p, t); }
    this.lastP = p;
    this.lastTracker = t;
    return t;
  }

  distinct(): number {
    let n = 0;
    for (const t of this.trackers.values()) n += t.distinct;
    return n;
  }

  /** Every publisher it heard from has sent its end marker. */
  allEnded(): boolean {
    if (this.trackers.size === 0) return false;
    for (const t of this.trackers.values()) if (t.endTotal < 0) return false;
    return true;
  }
}

/** Lifecycle callbacks from clients to their process. */
export interface ClientEvents {
  subscribed(c: ClientState): void;
  unsubscribed(c: ClientState): void;
  connectFailed(err: unknown): void;
  reconnecting(): void;
  subError(message: string): void;
}

export class Receiver {
  /** Latencies since the last tick; the process ships and resets it every second. */
  readonly window = new LatencyStats();
  received = 0;
  endMarkers = 0;
  badFrames = 0;
  /** performance.now() of the last delivery, 0 before the first. */
  lastMessageAt = 0;

  /** @param fromOne trackers count expected messages from sequence 1 (see SeqTracker). */
  constructor(private readonly fromOne: boolean) {}

  /** A raw payload (Redis message, NATS message data). */
  payload(c: ClientState, str: string, recvUs: number): void {
    if (!scanPayload(str, 0)) { this.badFrames++; return; }
    this.account(c, recvUs);
  }

  /**
   * A gateway data frame. Returns the frame kind from scanGatewayFrame: 0 means a control frame the
   * caller handles; on 1 `scanned.gwSeq`/`scanned.channel` are valid.
   */
  gatewayFrame(c: ClientState, str: string, recvUs: number): 1 | 0 | -1 {
    const r = scanGatewayFrame(str);
    if (r === 1) this.account(c, recvUs);
    else if (r === -1) this.badFrames++;
    return r;
  }

  private account(c: ClientState, recvUs: number): void {
    const s = scanned;
    const t = c.tracker(s.p, this.fromOne);
    this.lastMessageAt = performance.now();
    if (s.end) { t.end(s.total); this.endMarkers++; return; }
    this.received++;
    this.window.record(recvUs - s.t);
    t.see(s.s);
  }
}

export { nowUs };
