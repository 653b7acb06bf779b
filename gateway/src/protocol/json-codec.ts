import type { Codec } from "./codec.js";
import { ErrorCode } from "./codes.js";
import { decodeJsonText } from "./frames.js";
import { buildFrames, deltaFrame, jsonFrame, joinLines, msgFrame } from "./serialize.js";
import { PROTOCOL_V1 } from "./subprotocol.js";

/** fanout.v1: UTF-8 JSON text frames (PROTOCOL.md); binary frames are refused with `bad_json`. */
export const JSON_CODEC: Codec = {
  name: "json",
  subprotocol: PROTOCOL_V1,
  binary: false,
  slot: 0,
  decode: (data, isBinary) =>
    isBinary
      ? { ok: false, code: ErrorCode.BadJson, message: "frames must be UTF-8 JSON text, not binary" }
      : decodeJsonText(Buffer.from(data).toString("utf8")),
  encode: jsonFrame,
  msg: msgFrame,
  delta: deltaFrame,
  msgs: buildFrames,
  batch: joinLines,
};
