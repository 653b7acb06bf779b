import type { Feed } from "./feed.js";
import type { LateReceiver } from "./routes.js";
import type { FanoutSocket } from "./socket.js";
import type { MsgFrames } from "../protocol/codec.js";

/** One pattern's members, listening to its feed (in a door's own way) while it has any. */
export interface PatternGroup<M> {
  readonly feed: Feed;
  readonly members: Set<M>;
  /** Starts listening to `feed` (the group's first member joined). */
  attach(): void;
  /** Stops listening (the last member left, or the pattern's feed was replaced). */
  detach(): void;
}

/**
 * The groups of a worker's receivers per pattern, for what a door delivers once per pattern rather than per
 * receiver: the one owner of those groups, so that a group is attached to its feed exactly while it has
 * members, and a group of a feed that was replaced is dropped for one of the new feed.
 */
export class PatternGroups<M, G extends PatternGroup<M> = PatternGroup<M>> {
  private readonly groups = new Map<string, G>();

  constructor(private readonly make: (feed: Feed) => G) {}

  /** `m` joins the group of `feed`'s pattern. */
  join(feed: Feed, m: M): void {
    let g = this.groups.get(feed.pattern);
    if (!g || g.feed !== feed) {
      g?.detach();
      g = this.make(feed);
      this.groups.set(feed.pattern, g);
      g.attach();
    }
    g.members.add(m);
  }

  /** `m` leaves the group of `pattern` (a no-op when it is not in it). */
  leave(pattern: string, m: M): void {
    const g = this.groups.get(pattern);
    if (!g?.members.delete(m) || g.members.size > 0) return;
    g.detach();
    this.groups.delete(pattern);
  }

  /** Patterns with a group. */
  get size(): number {
    return this.groups.size;
  }
}

/** A live receiver the feed may owe a late repair: above `covered` it never got it from a catch-up. */
export interface LateMember {
  /** Since it last joined live: every stored message up to here was written to it, or is older than its start. */
  readonly covered: number;
  readonly socket: FanoutSocket;
}

/**
 * One pattern's live receivers that join a uWS topic, for the messages its feed repairs late: the topic cannot
 * carry those, since a receiver that joined after a catch-up may have read one from the stream already. Each
 * gets a late message only if it is above what its catch-up covered.
 */
export class LateGroup implements PatternGroup<LateMember>, LateReceiver {
  readonly members = new Set<LateMember>();

  private detachLate?: () => void;

  constructor(readonly feed: Feed) {}

  attach(): void {
    this.detachLate = this.feed.routes.add("late", this);
  }

  detach(): void {
    this.detachLate?.();
  }

  onLate(seq: number, msg: MsgFrames): void {
    for (const m of this.members) if (seq > m.covered && !m.socket.closed) m.socket.send(msg.frame(m.socket.codec), seq);
  }
}
