import { ErrorCode } from "../codes.js";
import type { Decoded } from "../frames.js";
import type { MsgMeta, ServerFrame, StoredMsg } from "../server-frames.js";
import { disconnectOf } from "./codes.js";
import { readPublisher } from "../publisher-info.js";
import { readStoredTags } from "../tags.js";
import { MAX_COMMANDS_PER_FRAME } from "./json.js";
import { decodeDelimited, encodeDelimited, ProtoError, varintLength, writeVarint, type DecodeState } from "./proto-wire.js";
import { clientChannel, metaOf, publicationReply, replyOfFrame, Stored, type CentrifugeCodec, type Reply } from "./shapes.js";

/**
 * The Centrifuge client protocol's Protobuf format (WebSocket subprotocol `centrifuge-protobuf`): binary frames
 * of Command (client) and Reply (server) messages, each prefixed by its varint length, several to a frame both
 * ways. The replies and pushes are shapes.ts's, the same objects json.ts writes as JSON; `data` and `info` are
 * bytes holding JSON (a stored payload's bytes as they are), as the SDKs' Protobuf builds hand them to apps
 * and send them. Publications are written once per worker for every socket of this format, never per socket.
 */

/** The subprotocol the Centrifuge SDKs offer for this format. */
export const CENTRIFUGE_PROTOBUF = "centrifuge-protobuf";

const EMPTY = new Uint8Array(0);

/** A frame's commands, as the JSON format's decoder gives them (commands.ts reads both), or why there are none. */
export function decodeProtoCommands(bytes: Uint8Array): Decoded {
  const st: DecodeState = { mayNotFitJson: false };
  try {
    return { ok: true, value: decodeDelimited("Command", bytes, MAX_COMMANDS_PER_FRAME, st), mayNotFitJson: st.mayNotFitJson };
  } catch (e) {
    if (!(e instanceof ProtoError)) throw e;
    return { ok: false, code: ErrorCode.BadRequest, message: e.message };
  }
}

/** A reply or push as one length-prefixed Reply. */
export const encodeProtoReply = (r: Reply): Buffer => encodeDelimited("Reply", r);

/**
 * A publication push of a stored payload: its bytes as `data`, the stream seq as `offset`. Written straight
 * into one buffer (the hot path: once per message per worker); the same bytes as `encodeProtoReply` of
 * `publicationReply` (the unit tests hold them equal).
 */
export function protoPublicationPush(meta: MsgMeta, payload: Uint8Array): Buffer {
  // With a publisher (a WebSocket client's publish) or tags: through the general encoder (still once per worker).
  if (readPublisher(meta.publisher) || readStoredTags(meta.tags)) return encodeProtoReply(publicationReply(meta, payload));
  const channel = Buffer.from(clientChannel(meta.channel), "utf8");
  // Reply{push(4): Push{channel(2), pub(4): Publication{data(4), offset(6)}}}
  const pub = 1 + varintLength(payload.length) + payload.length + (meta.seq > 0 ? 1 + varintLength(meta.seq) : 0);
  const push = (channel.length > 0 ? 1 + varintLength(channel.length) + channel.length : 0) + 1 + varintLength(pub) + pub;
  const reply = 1 + varintLength(push) + push;
  const out = Buffer.allocUnsafe(varintLength(reply) + reply);
  let p = writeVarint(out, 0, reply);
  out[p++] = 0x22;
  p = writeVarint(out, p, push);
  if (channel.length > 0) {
    out[p++] = 0x12;
    p = writeVarint(out, p, channel.length);
    p += channel.copy(out, p);
  }
  out[p++] = 0x22;
  p = writeVarint(out, p, pub);
  out[p++] = 0x22;
  p = writeVarint(out, p, payload.length);
  out.set(payload, p);
  p += payload.length;
  if (meta.seq > 0) {
    out[p++] = 0x30;
    writeVarint(out, p, meta.seq);
  }
  return out;
}

/** A server frame as a reply or push; no bytes for the frames the protocol has no counterpart of. */
export function encodeProtoFrame(f: ServerFrame): Uint8Array {
  const r = replyOfFrame(f);
  return r ? encodeProtoReply(r) : EMPTY;
}

/** Centrifuge's Protobuf format as a codec (protocol/codecs.ts): selected by the door's endpoint, never by /ws. */
export const CENTRIFUGE_PROTOBUF_CODEC: CentrifugeCodec = {
  name: "centrifuge-protobuf",
  subprotocol: CENTRIFUGE_PROTOBUF,
  binary: true,
  slot: 3,
  decode: (data, isBinary) =>
    isBinary ? decodeProtoCommands(new Uint8Array(data)) : { ok: false, code: ErrorCode.BadRequest, message: "Protobuf commands come in binary frames" },
  encode: encodeProtoFrame,
  reply: encodeProtoReply,
  msg: protoPublicationPush,
  // The SDK applies `data` (bytes) as the Fossil delta when `delta` is set; full publications are the shared frames.
  delta: (meta, _base, delta) => {
    const info = readPublisher(meta.publisher);
    const tags = readStoredTags(meta.tags);
    return encodeProtoReply({
      push: {
        channel: clientChannel(meta.channel),
        pub: {
          data: new Stored(delta, "application/octet-stream"),
          ...(info ? { info } : {}),
          ...(tags ? { tags } : {}),
          offset: meta.seq,
          delta: true,
        },
      },
    });
  },
  msgs: (pattern: string, messages: readonly StoredMsg[]) => messages.map((m) => protoPublicationPush(metaOf(pattern, m), m.payload)),
  // Length-prefixed messages follow each other: a coalesced frame is their bytes in order.
  batch: (frames) => Buffer.concat(frames),
  closeCode: disconnectOf,
};
