// The per-message path shared by all client kinds: latency into the current window, sequence
// accounting per (client, publisher), end markers, clock correction. One Receiver per process.
import { hostname } from "node:os";
import { LatencyStats, nowUs, publisherHost, safeHostId } from "./shared/mod.js";
import { SeqTracker } from "./seq-tracker.js";
import { scanned, scanPayload, scanGatewayFrame } from "./frame.js";
import { bs, scanCentrifugeLine, scanGatewayBytes, scanSocketIoBytes } from "./scan-bytes.js";

/** What one subscriber remembers: a tracker per publisher, indexed by the process's publisher number. */
export class ClientState {
  readonly trackers: (SeqTracker | undefined)[] = [];
  /** Subscribed on every channel right now. */
  subscribed = false;
  /** Was subscribed at least once. */
  everSubscribed = false;
  /** Cause of the last failed connection attempt (ECONNREFUSED, EADDRNOTAVAIL, HTTP_429…), or null. */
  lastFailure: string | null = null;

  tracker(pub: number, fromOne: boolean): SeqTracker {
    let t = this.trackers[pub];
    if (t === undefined) {
      t = new SeqTracker(fromOne);
      this.trackers[pub] = t;
    }
    return t;
  }

  *all(): IterableIterator<SeqTracker> {
    for (const t of this.trackers) if (t !== undefined) yield t;
  }

  distinct(): number {
    let n = 0;
    for (const t of this.all()) n += t.distinct;
    return n;
  }

  /** Every publisher it heard from has sent its end marker. */
  allEnded(): boolean {
    let any = false;
    for (const t of this.all()) {
      any = true;
      if (t.endTotal < 0) return false;
    }
    return any;
  }
}

/** Lifecycle callbacks from clients to their process. */
export interface ClientEvents {
  subscribed(c: ClientState): void;
  unsubscribed(c: ClientState): void;
  /** A connection attempt failed; `reason` is a short code (ECONNREFUSED, EADDRNOTAVAIL, HTTP_429…). */
  connectFailed(err: unknown, reason?: string): void;
  reconnecting(): void;
  subError(message: string): void;
}

/** How the latencies of one publisher are corrected for clocks. */
export type PublisherClock = { id: string; host: string; sameHost: boolean; offsetUs: number | null; correctionUs: number; corrected: boolean };

export class Receiver {
  /** Latencies since the last tick; the process ships and resets it every second. */
  readonly window = new LatencyStats();
  received = 0;
  endMarkers = 0;
  badFrames = 0;
  /** Receive time (µs since the epoch) of the last delivery, 0 before the first. */
  lastRecvUs = 0;
  /** Receive times (µs since the epoch) of the first and the last message, end markers aside; 0 before the first. */
  firstMsgUs = 0;
  lastMsgUs = 0;
  /** Publishers seen by this process, by number; their clock correction. */
  readonly publishers: PublisherClock[] = [];
  private readonly pubIndex = new Map<string, number>();
  private lastPub = -1;
  private readonly lastPBytes = Buffer.alloc(512);
  private lastPLen = -1;
  private readonly myHost = safeHostId(hostname());

  /**
   * @param fromOne trackers count expected messages from sequence 1 (see SeqTracker).
   * @param clockOffsetUs this host's clock offset to the reference server (its clock − ours), or null if unknown.
   */
  constructor(
    private readonly fromOne: boolean,
    private readonly clockOffsetUs: number | null = null,
  ) {}

  /** A raw payload (Redis message, NATS message data). */
  payload(c: ClientState, str: string, recvUs: number): void {
    if (!scanPayload(str, 0)) {
      this.badFrames++;
      return;
    }
    this.accountScanned(c, recvUs);
  }

  /**
   * A gateway data frame as a string (the `ws` engine). Returns the frame kind from scanGatewayFrame: 0
   * means a control frame the caller handles; on 1 `scanned.gwSeq`/`scanned.sub` are valid.
   */
  gatewayFrame(c: ClientState, str: string, recvUs: number): 1 | 0 | -1 {
    const r = scanGatewayFrame(str);
    if (r === 1) this.accountScanned(c, recvUs);
    else if (r === -1) this.badFrames++;
    return r;
  }

  /** A gateway frame in bytes (the lean engine); on 1 `bs.seq` and `bs.subStart/End` are valid. */
  gatewayBytes(c: ClientState, buf: Buffer, s: number, e: number, recvUs: number): 1 | 0 | -1 {
    const r = scanGatewayBytes(buf, s, e);
    if (r === 1) this.accountBytes(c, buf, recvUs);
    else if (r === -1) this.badFrames++;
    return r;
  }

  /** A Socket.IO text frame: 0 when it is not a `msg` event (the caller handles it). */
  socketIoBytes(c: ClientState, buf: Buffer, s: number, e: number, recvUs: number): 1 | 0 | -1 {
    const r = scanSocketIoBytes(buf, s, e);
    if (r === 1) this.accountBytes(c, buf, recvUs);
    else if (r === -1) this.badFrames++;
    return r;
  }

  /** A centrifuge frame: lines joined by "\n"; lines that are not publications (replies, pings) go to `other`. */
  centrifugeBytes(c: ClientState, buf: Buffer, s: number, e: number, recvUs: number, other: (buf: Buffer, s: number, e: number) => void): void {
    let from = s;
    while (from < e) {
      let nl = from;
      while (nl < e && buf[nl] !== 10) nl++;
      const r = scanCentrifugeLine(buf, from, nl);
      if (r === 1) this.accountBytes(c, buf, recvUs);
      else if (r === -1) this.badFrames++;
      else other(buf, from, nl);
      from = nl + 1;
    }
  }

  private accountScanned(c: ClientState, recvUs: number): void {
    const s = scanned;
    let pub = this.lastPub;
    if (pub < 0 || this.publishers[pub]!.id !== s.p) pub = this.publisher(s.p, s.o);
    this.account(c, pub, s.end, s.total, s.s, s.t, recvUs, s.o);
  }

  private accountBytes(c: ClientState, buf: Buffer, recvUs: number): void {
    let pub: number;
    if (bs.pStr !== null) pub = this.publisher(bs.pStr, bs.o);
    else {
      const len = bs.pEnd - bs.pStart;
      if (len === this.lastPLen && sameBytes(buf, bs.pStart, this.lastPBytes, len)) pub = this.lastPub;
      else {
        pub = this.publisher(buf.toString("latin1", bs.pStart, bs.pEnd), bs.o);
        if (len <= this.lastPBytes.length) {
          buf.copy(this.lastPBytes, 0, bs.pStart, bs.pEnd);
          this.lastPLen = len;
        } else this.lastPLen = -1;
      }
    }
    this.account(c, pub, bs.end, bs.total, bs.s, bs.t, recvUs, bs.o);
  }

  /** The number of publisher `id`, registered (with its clock correction) on first sight. */
  private publisher(id: string, offsetUs: number): number {
    let n = this.pubIndex.get(id);
    if (n === undefined) {
      n = this.publishers.length;
      this.pubIndex.set(id, n);
      const host = publisherHost(id);
      const pc: PublisherClock = { id, host, sameHost: host === this.myHost, offsetUs: null, correctionUs: 0, corrected: false };
      this.publishers.push(pc);
      if (offsetUs === offsetUs) this.learnOffset(pc, offsetUs);
    }
    this.lastPub = n;
    this.lastPLen = -1;
    return n;
  }

  /** Latency in the server's clock: (recv + ours) − (t + theirs). On one host both clocks are one: no correction. */
  private learnOffset(pc: PublisherClock, offsetUs: number): void {
    pc.offsetUs = offsetUs;
    if (pc.sameHost || this.clockOffsetUs === null) return;
    pc.correctionUs = this.clockOffsetUs - offsetUs;
    pc.corrected = true;
  }

  private account(c: ClientState, pub: number, end: boolean, total: number, seq: number, t: number, recvUs: number, o: number): void {
    const tr = c.tracker(pub, this.fromOne);
    this.lastRecvUs = recvUs;
    if (end) {
      tr.end(total);
      this.endMarkers++;
      return;
    }
    const pc = this.publishers[pub]!;
    // End markers carry no offset: a publisher first seen by its end marker learns it from its next message.
    if (pc.offsetUs === null && o === o) this.learnOffset(pc, o);
    this.received++;
    if (this.firstMsgUs === 0) this.firstMsgUs = recvUs;
    this.lastMsgUs = recvUs;
    this.window.record(recvUs - t + pc.correctionUs);
    tr.see(seq);
  }
}

/** a[from, from+len) equals b[0, len): a JS loop, cheaper than a call into C++ for ids of a few dozen bytes. */
function sameBytes(a: Buffer, from: number, b: Buffer, len: number): boolean {
  for (let i = len - 1; i >= 0; i--) if (a[from + i] !== b[i]) return false;
  return true;
}

export { nowUs };
