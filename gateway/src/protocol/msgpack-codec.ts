import { isUtf8 } from "node:buffer";
import { Decoder, Encoder } from "@msgpack/msgpack";
import type { Codec } from "./codec.js";
import { ErrorCode } from "./codes.js";
import { TOO_DEEP } from "./depth.js";
import { msgpackBounds } from "./msgpack-bounds.js";
import type { Decoded } from "./frames.js";
import { isJsonPayload } from "./serialize.js";
import type { MsgMeta, ServerFrame, StoredMsg } from "./server-frames.js";
import { PROTOCOL_V1_MSGPACK } from "./subprotocol.js";

// One encoder per worker: frames are encoded one at a time, synchronously.
const encoder = new Encoder({ ignoreUndefined: true });

/** Decoders by size class: the i-th takes no string, bin, ext, array or map longer than 2^i (made on first use). */
const decoders: Decoder[] = [];

/** A decoder whose length limits are the next power of two at or above `size` (the frame's bytes). */
function decoderFor(size: number): Decoder {
  const i = Math.max(4, Math.ceil(Math.log2(Math.max(size, 1))));
  const max = 2 ** i;
  return (decoders[i] ??= new Decoder({ maxStrLength: max, maxBinLength: max, maxExtLength: max, maxArrayLength: max, maxMapLength: max }));
}

/**
 * A `msg` frame's map: the JSON frame's keys in its order, with the stored payload as it is: `data` holds
 * JSON text as bytes (no `enc`), or a UTF-8 string that is not JSON (`enc: "text"`), or any other bytes
 * (`enc: "binary"`, with `type` when it was published with a content type). The payload is never parsed.
 */
function msgMap(meta: MsgMeta, payload: Uint8Array): Record<string, unknown> {
  const m: Record<string, unknown> = { op: "msg", channel: meta.channel, sub: meta.pattern, seq: meta.seq, ts: meta.ts };
  const d = meta.durable;
  if (d) {
    m.durable = d.name;
    if (d.redelivered) {
      m.redelivered = true;
      m.deliveries = d.deliveries;
    }
  }
  if (meta.type !== undefined) {
    m.enc = "binary";
    m.type = meta.type;
    m.data = payload;
  } else if (isJsonPayload(payload)) m.data = payload;
  else if (isUtf8(payload)) {
    m.enc = "text";
    m.data = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString("utf8");
  } else {
    m.enc = "binary";
    m.data = payload;
  }
  return m;
}

/** A server frame's map: the JSON frame's object (an `ok` frame's results beside its `op` and `id`). */
function frameMap(f: ServerFrame): unknown {
  if (f.op === "ok") return { op: "ok", id: f.id, ...f.fields };
  return f;
}

/**
 * fanout.v1.msgpack: every frame, in both directions, is one binary WebSocket frame holding one MessagePack
 * map with the keys of the JSON frame; a text frame is refused with `bad_json` (it cannot be decoded).
 */
export const MSGPACK_CODEC: Codec = {
  name: "msgpack",
  subprotocol: PROTOCOL_V1_MSGPACK,
  binary: true,
  slot: 1,
  decode(data, isBinary): Decoded {
    if (!isBinary) return { ok: false, code: ErrorCode.BadJson, message: "frames of fanout.v1.msgpack are binary MessagePack, not text" };
    const bytes = new Uint8Array(data);
    // Walked first, without allocating: a header may declare far more than the frame holds (msgpack-bounds.ts).
    const refused = msgpackBounds(bytes);
    if (refused?.kind === "depth") return { ok: false, code: ErrorCode.BadRequest, message: TOO_DEEP };
    if (refused) return { ok: false, code: ErrorCode.BadJson, message: `frame is not one valid MessagePack value: ${refused.message}` };
    try {
      // A binary codec can carry what JSON cannot (Infinity, bytes, timestamps): validation walks the value.
      return { ok: true, value: decoderFor(bytes.length).decode(bytes), mayNotFitJson: true };
    } catch {
      return { ok: false, code: ErrorCode.BadJson, message: "frame is not one valid MessagePack value" };
    }
  },
  encode: (f) => encoder.encode(frameMap(f)),
  msg: (meta, payload) => encoder.encode(msgMap(meta, payload)),
  // A delta `msg` frame: the msg map's keys with `delta: true`, `base`, and the Fossil delta's bytes as `data` (bin).
  delta: (meta, base, delta) =>
    encoder.encode({ op: "msg", channel: meta.channel, sub: meta.pattern, seq: meta.seq, ts: meta.ts, delta: true, base, data: delta }),
  msgs: (pattern: string, messages: readonly StoredMsg[]) =>
    messages.map((m) => encoder.encode(msgMap({ channel: m.channel, pattern, seq: m.seq, ts: m.ts, type: m.type }, m.payload))),
  batch: msgArray,
};

/**
 * A coalesced frame: one MessagePack array of the `msg` maps, in order. The maps are already encoded (once per
 * message per worker), so only the array's header is written here: what the encoder writes for an array of
 * that length (fixarray, array 16 or array 32; the codec test compares it with the library's encoding).
 */
function msgArray(frames: readonly Uint8Array[]): Uint8Array {
  const n = frames.length;
  const head = n < 16 ? 1 : n < 0x10000 ? 3 : 5;
  let size = head;
  for (const f of frames) size += f.length;
  const out = Buffer.allocUnsafe(size);
  if (head === 1) out[0] = 0x90 | n;
  else if (head === 3) {
    out[0] = 0xdc;
    out.writeUInt16BE(n, 1);
  } else {
    out[0] = 0xdd;
    out.writeUInt32BE(n, 1);
  }
  let o = head;
  for (const f of frames) {
    out.set(f, o);
    o += f.length;
  }
  return out;
}
