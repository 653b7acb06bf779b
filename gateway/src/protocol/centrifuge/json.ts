import { isUtf8 } from "node:buffer";
import { ErrorCode } from "../codes.js";
import { jsonNestsDeeper, TOO_DEEP } from "../depth.js";
import type { Decoded } from "../frames.js";
import { mayHoldHugeNumber } from "../json-numbers.js";
import { isJsonPayload, joinLines } from "../serialize.js";
import type { MsgMeta, ServerFrame, StoredMsg } from "../server-frames.js";
import { disconnectOf } from "./codes.js";
import { readPublisher } from "../publisher-info.js";
import { readStoredTags } from "../tags.js";
import { clientChannel, disconnectReply, metaOf, publicationReply, replyOfFrame, Stored, type CentrifugeCodec, type Reply } from "./shapes.js";

export { clientChannel } from "./shapes.js";

/**
 * The Centrifuge client protocol's JSON format on this gateway's codec seam: commands and replies are JSON
 * objects separated by `\n`, several to a WebSocket text frame both ways. Publications are `msg` frames to the
 * codec seam: each one is written once per worker for every socket of this door (fanout/hub.ts), never per
 * socket. The shapes of every reply and push are shapes.ts's; this file only writes them as JSON.
 */

/** The most commands one frame may carry: a frame with more is refused whole (`bad_request`). */
export const MAX_COMMANDS_PER_FRAME = 256;

/**
 * A frame's commands, each a JSON value not yet validated (centrifugo/client/commands.ts does), in order. Blank
 * lines are skipped; a line that is not JSON refuses the whole frame, as does one nested too deep.
 */
export function decodeCommands(text: string): Decoded {
  const lines = text.split("\n").filter((l) => l.trim().length > 0);
  if (lines.length > MAX_COMMANDS_PER_FRAME)
    return { ok: false, code: ErrorCode.BadRequest, message: `a frame carries at most ${MAX_COMMANDS_PER_FRAME} commands (this one ${lines.length})` };
  const value: unknown[] = [];
  let mayNotFitJson = false;
  for (const line of lines) {
    if (jsonNestsDeeper(line)) return { ok: false, code: ErrorCode.BadRequest, message: TOO_DEEP };
    try {
      value.push(JSON.parse(line));
    } catch {
      return { ok: false, code: ErrorCode.BadJson, message: "a command is not valid JSON" };
    }
    mayNotFitJson ||= mayHoldHugeNumber(line);
  }
  return { ok: true, value, mayNotFitJson };
}

/** A stored payload as JSON: JSON as stored (verbatim), other text as a JSON string, other bytes base64 in a string. */
function storedJson(s: Stored): Buffer {
  const bytes = Buffer.from(s.payload.buffer, s.payload.byteOffset, s.payload.byteLength);
  if (s.type === undefined && isJsonPayload(s.payload)) return bytes;
  if (s.type === undefined && isUtf8(bytes)) return Buffer.from(JSON.stringify(bytes.toString("utf8")));
  return Buffer.from(`"${bytes.toString("base64")}"`);
}

const storedValue = (_key: string, v: unknown): unknown => (v instanceof Stored ? (JSON.parse(storedJson(v).toString("utf8")) as unknown) : v);

/**
 * A reply or push as one JSON line. A publication push of a stored payload is one allocation around the
 * payload's bytes (`{"push":{"channel":…,"pub":{"data":…,"offset":seq}}}`), its data never parsed.
 */
export function encodeReply(r: Reply): string | Buffer {
  const pub = r.push?.pub;
  if (r.push && pub?.data instanceof Stored && r.id === undefined) {
    const rest = JSON.stringify({ ...pub, data: undefined });
    const head = Buffer.from(`{"push":{"channel":${JSON.stringify(r.push.channel ?? "")},"pub":{"data":`);
    return Buffer.concat([head, storedJson(pub.data), Buffer.from(rest === "{}" ? "}}}" : `,${rest.slice(1)}}}`)]);
  }
  return JSON.stringify(r, storedValue);
}

/**
 * A publication push of a stored payload: JSON verbatim, other text as a JSON string, bytes as base64. Written
 * straight around the payload (the hot path: once per message per worker); the same bytes as `encodeReply` of
 * `publicationReply`.
 */
export function publicationPush(meta: MsgMeta, payload: Uint8Array): Buffer {
  // With a publisher (a WebSocket client's publish) or tags: beside the data, still once per worker.
  if (readPublisher(meta.publisher) || readStoredTags(meta.tags)) return encodeReply(publicationReply(meta, payload)) as Buffer;
  const head = Buffer.from(`{"push":{"channel":${JSON.stringify(clientChannel(meta.channel))},"pub":{"data":`);
  return Buffer.concat([head, storedJson(new Stored(payload, meta.type)), Buffer.from(`,"offset":${meta.seq}}}}`)]);
}

/** A `disconnect` push. */
export const disconnectPush = (code: number, reason: string): string => encodeReply(disconnectReply(code, reason)) as string;

/** A server frame as a reply or push; "" for the frames the protocol has no counterpart of. */
export function encodeFrame(f: ServerFrame): string | Buffer {
  const r = replyOfFrame(f);
  return r ? encodeReply(r) : "";
}

/**
 * A publication push of a `delta: "fossil"` subscription: Centrifuge's JSON format sends such a subscription's
 * data as a JSON string holding the publication's JSON (the SDK parses it, and keeps its bytes as the base of
 * the next delta: the stored payload's bytes for a JSON payload).
 */
export function deltaSubscriptionPush(meta: MsgMeta, payload: Uint8Array): Buffer {
  const data = JSON.stringify(storedJson(new Stored(payload, meta.type)).toString("utf8"));
  return Buffer.from(`{"push":{"channel":${JSON.stringify(clientChannel(meta.channel))},"pub":{"data":${data}${infoField(meta)},"offset":${meta.seq}}}}`);
}

/** `,"info":{…}` of a publication a WebSocket client published, `,"tags":{…}` of one with tags; "" otherwise. */
const infoField = (meta: MsgMeta): string => {
  const info = readPublisher(meta.publisher);
  const tags = readStoredTags(meta.tags);
  return `${info ? `,"info":${JSON.stringify(info)}` : ""}${tags ? `,"tags":${JSON.stringify(tags)}` : ""}`;
};

/**
 * A delta publication push: `delta: true`, the Fossil delta from the channel's previous publication as a JSON
 * string (the SDK takes its UTF-8 bytes as the delta). A delta that is not UTF-8 (a copy boundary inside a
 * multi-byte character) has no such string: the publication is sent whole, which leaves the client where the
 * delta would have.
 */
export function deltaPush(meta: MsgMeta, _base: number, delta: Uint8Array, payload: Uint8Array): Buffer {
  const bytes = Buffer.from(delta.buffer, delta.byteOffset, delta.byteLength);
  if (!isUtf8(bytes)) return deltaSubscriptionPush(meta, payload);
  const channel = JSON.stringify(clientChannel(meta.channel));
  return Buffer.from(
    `{"push":{"channel":${channel},"pub":{"data":${JSON.stringify(bytes.toString("utf8"))}${infoField(meta)},"offset":${meta.seq},"delta":true}}}`,
  );
}

const decodeJson: CentrifugeCodec["decode"] = (data, isBinary) =>
  isBinary ? { ok: false, code: ErrorCode.BadJson, message: "JSON commands come in text frames" } : decodeCommands(Buffer.from(data).toString("utf8"));

/** The JSON format's frames for `delta: "fossil"` subscriptions (the JSON codec's `deltaCodec`): data as a JSON string, and deltas. */
export const CENTRIFUGE_JSON_DELTA_CODEC: CentrifugeCodec = {
  name: "centrifuge-json-delta",
  subprotocol: "centrifuge-json-delta",
  binary: false,
  // After CODECS' slots (protocol/codecs.ts checks it): never a connection's codec, so no topic of its own.
  slot: 4,
  decode: decodeJson,
  encode: encodeFrame,
  reply: encodeReply,
  msg: deltaSubscriptionPush,
  delta: deltaPush,
  msgs: (pattern: string, messages: readonly StoredMsg[]) => messages.map((m) => deltaSubscriptionPush(metaOf(pattern, m), m.payload)),
  batch: joinLines,
  closeCode: disconnectOf,
};

/** Centrifuge's JSON format as a codec (protocol/codecs.ts): selected by the door's endpoint, never by a /ws subprotocol. */
export const CENTRIFUGE_JSON_CODEC: CentrifugeCodec = {
  name: "centrifuge-json",
  // Centrifuge's JSON clients offer no subprotocol; this name is not among /ws's (protocol/subprotocol.ts), so /ws never selects it.
  subprotocol: "centrifuge-json",
  binary: false,
  slot: 2,
  decode: decodeJson,
  encode: encodeFrame,
  reply: encodeReply,
  msg: publicationPush,
  // A delta subscription's frames, deltas and full ones, are its delta codec's: this one never writes a delta.
  delta: deltaPush,
  deltaCodec: CENTRIFUGE_JSON_DELTA_CODEC,
  msgs: (pattern: string, messages: readonly StoredMsg[]) => messages.map((m) => publicationPush(metaOf(pattern, m), m.payload)),
  batch: joinLines,
  closeCode: disconnectOf,
};
