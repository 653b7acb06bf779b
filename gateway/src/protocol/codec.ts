import type { Decoded } from "./frames.js";
import type { MsgMeta, ServerFrame, StoredMsg } from "./server-frames.js";

/**
 * One encoding of the wire protocol, chosen per connection by its WebSocket subprotocol. A codec only turns
 * bytes into values and values into bytes: what a client frame may hold is `validateClientFrame`'s, which
 * frames the server sends is `ServerFrame`'s, the same for every codec.
 */
export interface Codec {
  /** Short name (metrics, logs, topic suffixes). */
  readonly name: string;
  /** The WebSocket subprotocol that selects it. */
  readonly subprotocol: string;
  /** Its frames are binary WebSocket frames (text frames otherwise). */
  readonly binary: boolean;
  /** Its index in `CODECS`: the slot of its encodings in per-codec caches. */
  readonly slot: number;
  /** A client frame's bytes as a value (not validated), or why they are none. `isBinary`: the frame's opcode. */
  decode(data: ArrayBuffer, isBinary: boolean): Decoded;
  /** A server frame other than `msg`. */
  encode(frame: ServerFrame): string | Uint8Array;
  /** A `msg` frame of one message (once per message per worker, never per socket). */
  msg(meta: MsgMeta, payload: Uint8Array): Uint8Array;
  /**
   * A delta `msg` frame (PROTOCOL.md "Deltas"): `delta` is the Fossil delta from the payload of message `base`
   * of the same channel. Once per message per worker and codec, like `msg`.
   */
  delta(meta: MsgMeta, base: number, delta: Uint8Array, payload: Uint8Array): Uint8Array;
  /**
   * The codec of this codec's `delta: "fossil"` subscriptions when their full frames differ from the others'
   * (Centrifuge's JSON format sends their data as a JSON string); absent: this one. Its slot follows `CODECS`'.
   */
  readonly deltaCodec?: Codec;
  /** The `msg` frames of a page of stored messages of one pattern, in order. */
  msgs(pattern: string, messages: readonly StoredMsg[]): Uint8Array[];
  /**
   * Several `msg` frames of this codec as one coalesced frame, in order (PROTOCOL.md "Coalesced frames"): once
   * per window per worker, only for connections that said they read them.
   */
  batch(frames: readonly Uint8Array[]): Uint8Array;
  /**
   * The WebSocket close code its clients are sent for one of the gateway's (protocol/codes.ts `CloseCode`), when
   * its protocol has codes of its own (Centrifuge's disconnect codes); absent: the gateway's as they are.
   */
  closeCode?(code: number): number;
}

/**
 * One message's `msg` frames, built on first use once per codec (per worker, never per socket): a live
 * message fanned out to JSON and binary sockets is encoded twice, one only JSON sockets listen to once.
 */
export interface MsgFrames {
  frame(codec: Codec): Uint8Array;
  /** About what holding it costs (payload and frame), for bounds on held messages. */
  readonly size: number;
}

/** The frames of one live message. */
export class LiveMsg implements MsgFrames {
  private readonly frames: (Uint8Array | undefined)[] = [];

  constructor(
    private readonly meta: MsgMeta,
    private readonly payload: Uint8Array,
  ) {}

  get size(): number {
    return this.payload.length + 96;
  }

  frame(codec: Codec): Uint8Array {
    return (this.frames[codec.slot] ??= codec.msg(this.meta, this.payload));
  }
}

/** The delta frames of one live message, built on first use once per codec, as `LiveMsg`'s full ones. */
export class DeltaMsg {
  private readonly frames: (Uint8Array | undefined)[] = [];

  constructor(
    private readonly meta: MsgMeta,
    private readonly base: number,
    private readonly delta: Uint8Array,
    /** The message's own payload: a codec that cannot carry this delta sends it whole (the client's state is the same). */
    private readonly payload: Uint8Array,
  ) {}

  frame(codec: Codec): Uint8Array {
    return (this.frames[codec.slot] ??= codec.delta(this.meta, this.base, this.delta, this.payload));
  }
}

/** A frame as bytes (a text frame's string as UTF-8). */
export const frameBytes = (f: string | Uint8Array): Uint8Array => (typeof f === "string" ? Buffer.from(f) : f);
