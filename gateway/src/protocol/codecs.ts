import type { Codec } from "./codec.js";
import { JSON_CODEC } from "./json-codec.js";

/** Every codec the server speaks, each at its `slot`; the first (JSON) is the default. */
export const CODECS: readonly Codec[] = [JSON_CODEC];

/** The codec of a negotiated subprotocol; JSON when none was (a client that offered no subprotocol). */
export function codecOf(subprotocol: string): Codec {
  return CODECS.find((c) => c.subprotocol === subprotocol) ?? JSON_CODEC;
}

export { JSON_CODEC };
