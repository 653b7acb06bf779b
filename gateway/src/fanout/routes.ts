import type { MsgFrames } from "../protocol/codec.js";
import type { DeltaSubscription } from "./deltas.js";
import type { FanoutSocket } from "./socket.js";

/**
 * Something that sees every live message of a feed besides the uWS topics: a catch-up (which holds them
 * until it joins), or a transport whose receivers are not uWS sockets (the SSE side encodes each message
 * once for all its streams of the pattern). `msg` holds the message's `msg` frames, built once per message
 * per worker and codec, on first use.
 */
export interface LiveListener {
  onLive(seq: number, msg: MsgFrames): void;
}

/**
 * The WebSockets of a feed's topic, for the messages the topic cannot carry: one the live feed repaired late
 * (older than messages it fanned out since). A socket that joined after a catch-up may have had it from the
 * stream already, so each socket is asked, not the whole topic.
 */
export interface LateReceiver {
  onLate(seq: number, msg: MsgFrames): void;
}

/**
 * A `delta: "fossil"` subscription in live delivery (fanout/delta-socket.ts): the hub sends it each message's
 * one delta frame or one full frame, as its `deltas` say, instead of publishing to it through the topic.
 */
export interface DeltaReceiver {
  readonly codec: FanoutSocket["codec"];
  readonly closed: boolean;
  readonly deltas: DeltaSubscription;
  /** Sends a live message's frame (uWS semantics: 1 sent, 0 buffered, 2 dropped). */
  deliver(frame: Uint8Array, seq: number): number;
}

/**
 * The routes a feed's live messages take besides its uWS topics, by kind, and what receives each:
 * - `live`: every message in order, after the topics had it (catch-ups, SSE groups);
 * - `late`: only the messages the broker's feed repaired late, which the topics do not carry;
 * - `delta`: every message as its own delta or full frame, instead of a topic.
 */
export type RouteReceivers = { live: LiveListener; late: LateReceiver; delta: DeltaReceiver };
export type RouteKind = keyof RouteReceivers;

/** Where a receiver joins a feed's delivery (the feed's side of its `DeliveryRoutes`). */
export interface Routes {
  /**
   * `r` receives the feed's messages of route `kind` until the returned function is called. A receiver is on
   * a route once (adding it again while it is there changes nothing); each returned function removes at most
   * once, so a receiver that left and joined again is not removed by its former registration's function.
   */
  add<K extends RouteKind>(kind: K, r: RouteReceivers[K]): () => void;
}

/**
 * A feed's route table: the one owner of its receivers, which the hub's `deliver` reads per message. Adding
 * and removing cost a set operation (and the remove function, once per registration); reading a route
 * allocates nothing.
 */
export class DeliveryRoutes implements Routes {
  private readonly routes: { readonly [K in RouteKind]: Set<RouteReceivers[K]> } = { live: new Set(), late: new Set(), delta: new Set() };

  add<K extends RouteKind>(kind: K, r: RouteReceivers[K]): () => void {
    const route = this.routes[kind] as Set<RouteReceivers[K]>;
    if (route.has(r)) return () => undefined;
    route.add(r);
    let on = true;
    return () => {
      if (!on) return;
      on = false;
      route.delete(r);
    };
  }

  /** The receivers of route `kind`, in the order they joined it. */
  of<K extends RouteKind>(kind: K): ReadonlySet<RouteReceivers[K]> {
    return this.routes[kind] as Set<RouteReceivers[K]>;
  }

  /** Every route empties (the feed stopped). */
  clear(): void {
    for (const route of Object.values(this.routes)) route.clear();
  }
}
