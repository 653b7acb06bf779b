import { DeltaSubscription } from "./deltas.js";
import type { Feed } from "./feed.js";
import type { DeltaReceiver } from "./routes.js";
import type { FanoutSocket } from "./socket.js";

/**
 * A `delta: "fossil"` subscription as the live feed sees it. uWS writes the same bytes to every socket of a
 * topic, and a delta subscription needs its own choice per message (delta or full), so it does not join the
 * topic: it joins its feed's delta route, and the hub sends each of them the one delta frame or the one
 * full frame of the message (built once per worker and codec; per socket only a map read and a send).
 *
 * It is the subscription's `FanoutSocket` for the resume path: catch-ups write through it as they do to any
 * socket, and `joinTopic` (the hand-off to live, the one place every start, resume and return from a pause
 * goes through) joins the feed's receivers and restarts its bases: the next message of each channel is full.
 */
export class DeltaSocket implements FanoutSocket, DeltaReceiver {
  readonly deltas: DeltaSubscription;
  /**
   * Not coalesced (PROTOCOL.md "Coalesced frames"), whatever its connection reads: the hub sends it each
   * message's own frame (delta or full) as it comes, since no other socket shares that choice.
   */
  readonly coalesce = false;
  /** Leaves the delta route of the feed it joined. */
  private leaveFeed?: () => void;

  constructor(
    readonly socket: FanoutSocket,
    /** The subscription's feed (held by it while it exists). */
    private readonly feed: () => Feed | undefined,
    maxChannels?: number,
  ) {
    this.deltas = new DeltaSubscription(maxChannels);
  }

  /** Its connection's codec, or that codec's codec for delta subscriptions (`deltaCodec`): every frame it gets is that codec's. */
  get codec(): FanoutSocket["codec"] {
    return this.socket.codec.deltaCodec ?? this.socket.codec;
  }

  get closed(): boolean {
    return this.socket.closed;
  }

  /**
   * A frame from outside the hub's delta path: a catch-up's (before the join, which restarts anyway) or a
   * message the feed repaired late, which becomes the client's base of its channel: the next message of
   * every channel is full, so that no delta is made against a base the client no longer holds.
   */
  send(frame: Uint8Array | string, seq?: number): number {
    this.deltas.restart();
    return this.socket.send(frame, seq);
  }

  /** A live message's frame as the hub chose it (delta or full) from `deltas`. */
  deliver(frame: Uint8Array, seq: number): number {
    return this.socket.send(frame, seq);
  }

  cork(fn: () => void): void {
    this.socket.cork(fn);
  }

  bufferedAmount(): number {
    return this.socket.bufferedAmount();
  }

  onDrained(fn: () => void): void {
    this.socket.onDrained(fn);
  }

  /** Joins live delivery: the feed's delta receivers, starting every channel over with a full message. */
  joinTopic(): void {
    this.leave();
    this.deltas.restart();
    this.leaveFeed = this.feed()?.routes.add("delta", this);
  }

  /** Leaves live delivery (a pause, the end). */
  leave(): void {
    this.leaveFeed?.();
    this.leaveFeed = undefined;
  }
}
