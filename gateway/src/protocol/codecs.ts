import type { Codec } from "./codec.js";
import { JSON_CODEC } from "./json-codec.js";
import { MSGPACK_CODEC } from "./msgpack-codec.js";
import { CENTRIFUGE_JSON_CODEC } from "./centrifuge/json.js";
import { CENTRIFUGE_PROTOBUF_CODEC } from "./centrifuge/protobuf.js";

/**
 * Every codec the server speaks, each at its `slot`; the first (JSON) is the default. The last two are the
 * Centrifuge door's (centrifugo/client/), its JSON and Protobuf formats: /ws never selects them, but their
 * publications go through the same per-codec frames and topics.
 */
export const CODECS: readonly Codec[] = [JSON_CODEC, MSGPACK_CODEC, CENTRIFUGE_JSON_CODEC, CENTRIFUGE_PROTOBUF_CODEC];
/** The codecs of delta subscriptions that differ from their connection's (`deltaCodec`): their slots follow CODECS'. */
const DELTA_CODECS: readonly Codec[] = CODECS.flatMap((c) => (c.deltaCodec ? [c.deltaCodec] : []));
for (const [i, c] of [...CODECS, ...DELTA_CODECS].entries()) if (c.slot !== i) throw new Error(`codec ${c.name} has slot ${c.slot}, not ${i}`);

/** The codec of a negotiated subprotocol; JSON when none was (a client that offered no subprotocol). */
export function codecOf(subprotocol: string): Codec {
  return CODECS.find((c) => c.subprotocol === subprotocol) ?? JSON_CODEC;
}

export { JSON_CODEC, MSGPACK_CODEC, CENTRIFUGE_JSON_CODEC, CENTRIFUGE_PROTOBUF_CODEC };
