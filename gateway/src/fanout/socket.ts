import type { Codec } from "../protocol/codec.js";

/**
 * What the fan-out core needs from a client socket. `ws/` implements it over a uWS WebSocket; tests use a
 * fake. Keeping it this small keeps `fanout/` free of uWS and of `ws/` (no import cycle).
 */
export interface FanoutSocket {
  /** The encoding its frames take (an SSE stream's is JSON). */
  readonly codec: Codec;
  /** True once the socket closed: nothing may be sent any more. */
  readonly closed: boolean;
  /**
   * uWS semantics: 1 sent, 0 buffered (backpressure), 2 dropped (over the hard cap). `frame` is in the
   * socket's codec. `seq` is the message's stream seq when `frame` is a `msg` frame, absent for control frames
   * (which an SSE stream skips).
   */
  send(frame: Uint8Array | string, seq?: number): number;
  /** Runs `fn` with writes batched into one syscall. */
  cork(fn: () => void): void;
  bufferedAmount(): number;
  /**
   * Joins the live topic of a feed, its codec's (uWS pub/sub; an SSE stream joins the feed's `streams` instead);
   * `coalesced`: the feed coalesces, so a socket that reads coalesced frames joins the coalesced topic. Only
   * `Feed.join` calls it (it flushes what the coalesced topic holds first).
   */
  joinTopic(topic: string, coalesced?: boolean): void;
  /** It reads coalesced frames (its connection said `coalesce=1`): it joins a coalescing feed's coalesced topic. */
  readonly coalesce?: boolean;
  /** Calls `fn` once when the socket's buffer has drained. */
  onDrained(fn: () => void): void;
}

/** Where the hub publishes a feed's frames: uWS topics of one app, or of several (plain and TLS listeners). */
export interface TopicPublisher {
  publish(topic: string, message: Uint8Array, isBinary: boolean, compress: boolean): boolean;
  numSubscribers(topic: string): number;
}
