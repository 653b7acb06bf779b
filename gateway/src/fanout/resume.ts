import type { ReplayApi, StreamState } from "../broker/broker.js";
import { GatewayError } from "../errors.js";
import type { Logger } from "../log.js";
import { ErrorCode } from "../protocol/codes.js";
import { CatchUp, type CatchUpEnd, type CatchUpOptions } from "./catchup.js";
import type { FanoutHub } from "./hub.js";
import type { Feed } from "./feed.js";
import type { FanoutSocket } from "./socket.js";
import type { Feature } from "../namespaces/spec.js";

/**
 * The one resume path of every door (WebSocket `sub`, Server-Sent Events, server-side subscriptions, a slow
 * receiver's return): where delivery starts, and how it gets from stored messages to live. Doors read a
 * start from their own wire format into a `StartRequest`, ask `resolveStart` where that is, and hand the
 * receiver (a `FanoutSocket`) to `Resume.prepare`; only the replies are theirs.
 */

/** Where a receiver asks to start. */
export type StartRequest =
  /** From now: every message after the feed's position, no catch-up. */
  | { kind: "live" }
  /** Everything the stream holds. */
  | { kind: "all" }
  /** The newest stored message of each matching channel (sent by the door), then everything after. */
  | { kind: "lastPerSubject" }
  /** The last `last` messages of the pattern. */
  | { kind: "last"; last: number }
  /** Messages stored at or after `time` (ISO 8601). */
  | { kind: "time"; time: string }
  /** A resume: the receiver has every message up to `after` of the stream numbered by `epoch` (when it gave one). */
  | { kind: "after"; after: number; epoch?: string };

/**
 * The namespace features a start uses, for the authorization chain: a resume from a seq is `resume`; the
 * newest value of each channel `lastValues`; any other stored start (all, a time, the last N) `history`.
 */
export function startFeatures(req: StartRequest): Feature[] {
  switch (req.kind) {
    case "live":
      return [];
    case "after":
      return ["resume"];
    case "lastPerSubject":
      return ["lastValues"];
    case "all":
    case "last":
    case "time":
      return ["history"];
  }
}

/** The stream's bounds and epoch when the start was resolved, and what the receiver must be told. */
export type StartReport = StreamState & {
  /** Messages the receiver asked for are gone: retention removed them, or they belonged to a deleted stream. */
  truncated?: true;
  /** Its position belongs to a stream that was deleted and created again: delivery restarts at the new stream's first message. */
  epochChanged?: true;
};

/** A resolved start: delivery follows `lastSent` (undefined: live from the feed's position when it joins). */
export type Start = { lastSent?: number; report?: StartReport };

/**
 * Where a resume (`after`, `epoch`) starts in the stream as it is (`st`). The one answer for every door:
 * - another epoch: the seqs mean nothing here; everything the new stream holds is new to the receiver
 *   (after `firstSeq - 1`), reported `truncated` and `epochChanged`;
 * - past the stream's last message: no such position exists; it is taken as the last message, so nothing
 *   the stream stores later is skipped;
 * - before the first stored message (retention removed what followed `after`): delivery starts at
 *   `firstSeq`, reported `truncated`;
 * - otherwise right after `after`.
 */
export function positionAfter(after: number, epoch: string | undefined, st: StreamState): { lastSent: number; truncated?: true; epochChanged?: true } {
  if (epoch !== undefined && epoch !== st.epoch) return { lastSent: Math.max(0, st.firstSeq - 1), truncated: true, epochChanged: true };
  if (after > st.lastSeq) return { lastSent: st.lastSeq };
  if (after + 1 < st.firstSeq) return { lastSent: st.firstSeq - 1, truncated: true };
  return { lastSent: after };
}

/**
 * Turns a start request into the seq delivery follows and the report of the stream's bounds. `live` reads
 * nothing from the broker; every other start needs one that keeps history (the doors refuse it before).
 */
export async function resolveStart(replay: ReplayApi | undefined, pattern: string, req: StartRequest): Promise<Start> {
  if (req.kind === "live") return {};
  if (!replay) throw new GatewayError(ErrorCode.UnsupportedByBroker, "this broker keeps no history: start positions need JetStream");
  const st = await replay.state(pattern);
  const report: StartReport = { firstSeq: st.firstSeq, lastSeq: st.lastSeq, epoch: st.epoch };
  // Regions: reads here are a mirror's, which may not hold yet what the stream's state says is stored.
  const reach = (seq: number): Promise<void> => (st.mirrorOnly || !replay.reach ? Promise.resolve() : replay.reach(pattern, seq));
  switch (req.kind) {
    case "all":
      return windowed({ lastSent: 0, report }, st);
    case "lastPerSubject":
      if (!replay.lastPerSubject) throw new GatewayError(ErrorCode.UnsupportedByBroker, "this broker has no last-value reads");
      await reach(st.lastSeq);
      // The snapshot is taken as of lastSeq; the catch-up continues after it: no gap, no duplicate.
      return { lastSent: st.lastSeq, report };
    case "time":
      await reach(st.lastSeq); // a time after every message read here is taken as the state's end
      return windowed({ lastSent: (await replay.seqAtTime(pattern, req.time)) - 1, report }, st);
    case "last":
      return windowed({ lastSent: (await replay.startOfLastN(pattern, req.last)) - 1, report }, st);
    case "after": {
      if (st.mirrorOnly && req.after > st.lastSeq && (req.epoch === undefined || req.epoch === st.epoch))
        throw new GatewayError(
          ErrorCode.BrokerUnavailable,
          `position ${req.after} is past this region's copy of the stream (seq ${st.lastSeq}) and the home region does not answer: try again`,
          { temporary: true },
        );
      const p = positionAfter(req.after, req.epoch, st);
      // Delivery joins this region's live feed after the position: the feed must have passed it.
      if (!p.epochChanged) await reach(p.lastSent);
      if (p.truncated) report.truncated = true;
      if (p.epochChanged) report.epochChanged = true;
      return windowed({ lastSent: p.lastSent, report }, st);
    }
  }
}

/**
 * A namespace's resume window (`resumeFrom`): a start before its first message begins there instead, and
 * is reported truncated, as if retention had removed what is older.
 */
function windowed(s: { lastSent: number; report: StartReport }, st: StreamState): Start {
  if (st.resumeFrom === undefined || s.lastSent >= st.resumeFrom - 1) return s;
  s.report.truncated = true;
  return { lastSent: st.resumeFrom - 1, report: s.report };
}

/** How a delivery ended: joined to live, suspended (the receiver is slow; resume after `lastSent`) or failed. */
export type DeliveryEnd = CatchUpEnd;

/** A receiver's way from its start to live delivery; `start` it once the caller has recorded it. */
export interface Delivery {
  start(): void;
  /** The receiver left live delivery (slow): stop after what was written; the end says where. */
  suspend(): void;
  /** Unsubscribed or closed: stop without a word. */
  abort(): void;
}

/** Joins the feed at its position at once (a live start, or a broker without history). */
class JoinNow implements Delivery {
  private done = false;
  constructor(
    private readonly sock: FanoutSocket,
    private readonly feed: Feed,
    private readonly onEnd: (e: DeliveryEnd) => void,
  ) {}

  start(): void {
    if (this.done || this.sock.closed) return;
    this.done = true;
    // Position and join in one synchronous step: every message after it reaches the receiver.
    const at = this.feed.position();
    this.feed.join(this.sock);
    this.onEnd({ type: "joined", lastSent: at, covered: at, held: [] });
  }

  suspend(): void {
    this.done = true;
  }

  abort(): void {
    this.done = true;
  }
}

/** The worker's resume path: catch-ups over the hub's shared pages, ending in live delivery. */
export class Resume {
  constructor(
    private readonly hub: FanoutHub,
    private readonly opts: CatchUpOptions,
    private readonly log: Logger,
    /** Counts deliveries a receiver missed for good (the `deliveries_dropped` metric). */
    private readonly dropped?: { inc(n: number): void },
  ) {}

  /** True when receivers can resume from a seq (the broker keeps history). */
  get replays(): boolean {
    return this.hub.pages !== undefined;
  }

  /**
   * Where a receiver that was paused (too slow) starts again: after its last message when the broker keeps
   * history; otherwise at the feed's position (undefined), the messages it missed meanwhile counted as dropped.
   */
  afterPause(feed: Feed, lastSent: number | undefined, countAtPause: number): number | undefined {
    if (this.replays) return lastSent;
    const missed = feed.count - countAtPause;
    if (missed > 0) this.dropped?.inc(missed);
    return undefined;
  }

  /**
   * Delivery to `sock` of every message of `feed` after `lastSent`: stored ones first (a catch-up), then
   * live, with no gap and no duplicate. With `lastSent` undefined, or on a broker without history, it joins
   * live at the feed's position. `onEnd` is called once, possibly from `start()` itself.
   */
  prepare(sock: FanoutSocket, feed: Feed, lastSent: number | undefined, onEnd: (e: DeliveryEnd) => void): Delivery {
    const pages = this.hub.pages;
    if (lastSent === undefined || !pages) return new JoinNow(sock, feed, onEnd);
    return new CatchUp(sock, feed.pattern, feed, pages, this.opts, this.log, lastSent, onEnd);
  }
}
