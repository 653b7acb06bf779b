import { msgpackFits } from "./msgpack-bounds.js";
import type { Frame } from "./types.js";

/** The subprotocol of wire protocol version 1 (PROTOCOL.md "Passing the token"). */
export const SUBPROTOCOL = "fanout.v1";
/** The same protocol in binary frames, one MessagePack map each (PROTOCOL.md "Subprotocols"). */
export const SUBPROTOCOL_MSGPACK = "fanout.v1.msgpack";

/**
 * A MessagePack library's two functions, as the `msgpack` option takes them: `encode` and `decode` of
 * `@msgpack/msgpack`, or another library's with the same meaning. The SDK itself has no dependency.
 */
export interface MsgpackFunctions {
  encode(value: unknown): Uint8Array;
  decode(bytes: Uint8Array): unknown;
}

/**
 * Where a decoded `msg` frame keeps what a delta subscription needs of its payload's exact bytes: the frame's
 * text (fanout.v1: `data` is spliced in last), or the payload's bytes (fanout.v1.msgpack). Not a wire field.
 */
export const RAW = Symbol("raw");
export type MsgRaw = string | Uint8Array;
/** Not enumerable: the frame stays the wire's value for everything that reads or compares it. */
const keepRaw = (f: Frame, raw: MsgRaw): void => void Object.defineProperty(f, RAW, { value: raw });

/** How frames are written and read on the socket: JSON text (fanout.v1) or MessagePack (fanout.v1.msgpack). */
export interface Wire {
  readonly subprotocol: string;
  /** Offered when no token asks for subprotocols: JSON needs none, a binary codec must be asked for. */
  readonly mustOffer: boolean;
  encode(frame: Record<string, unknown>): string | Uint8Array;
  /**
   * A received WebSocket frame's frames, in order: one, or several when it is coalesced (PROTOCOL.md
   * "Coalesced frames"); undefined when it cannot be decoded.
   */
  decode(data: unknown): Frame[] | undefined;
}

/** A coalesced JSON frame's frames: it is split at each `}` LF `{`, which no single JSON text holds. */
export function splitLines(text: string): string[] {
  const parts = text.split("}\n{");
  return parts.map((p, i) => (i > 0 ? "{" : "") + p + (i < parts.length - 1 ? "}" : ""));
}

export const JSON_WIRE: Wire = {
  subprotocol: SUBPROTOCOL,
  mustOffer: false,
  encode: (frame) => JSON.stringify(frame),
  decode(data) {
    try {
      const frames: Frame[] = [];
      // Each part of a coalesced frame is byte for byte the frame sent alone: its text is the delta base.
      for (const text of splitLines(typeof data === "string" ? data : String(data))) {
        const f = JSON.parse(text) as unknown;
        if (!isFrame(f)) return undefined;
        if (f.op === "msg") keepRaw(f, text);
        frames.push(f);
      }
      return frames;
    } catch {
      return undefined;
    }
  },
};

const isFrame = (f: unknown): f is Frame => typeof f === "object" && f !== null && !Array.isArray(f) && typeof (f as Frame).op === "string";

/** UTF-8 decoding from the host (browsers, React Native and Node all have it). */
const utf8 = (b: Uint8Array): string => new (globalThis as unknown as { TextDecoder: new () => { decode(b: Uint8Array): string } }).TextDecoder().decode(b);

/** fanout.v1.msgpack over the given library. */
export function msgpackWire(lib: MsgpackFunctions): Wire {
  return {
    subprotocol: SUBPROTOCOL_MSGPACK,
    mustOffer: true,
    encode: (frame) => lib.encode(frame),
    decode(data) {
      try {
        if (!(data instanceof ArrayBuffer)) return undefined;
        const bytes = new Uint8Array(data);
        // Before the library sees them: a header declaring more than the frame holds (a hostile server, or a
        // man in the middle on ws://) would make it allocate that much.
        if (!msgpackFits(bytes)) return undefined;
        const v = lib.decode(bytes);
        // A coalesced frame is an array of msg maps.
        const frames = Array.isArray(v) ? (v as unknown[]) : [v];
        if (!frames.every(isFrame)) return undefined;
        // A message's JSON payload comes as its bytes (no `enc`): parsed here, as the JSON wire gives it. A
        // delta's data stays its bytes.
        for (const f of frames)
          if (f.op === "msg" && f.data instanceof Uint8Array) {
            keepRaw(f, f.data);
            if (f.enc === undefined && f.delta !== true) f.data = JSON.parse(utf8(f.data)) as unknown;
          }
        return frames;
      } catch {
        return undefined;
      }
    },
  };
}
