// The shared coalesced-frame vectors (vectors/coalesced-frames.json, PROTOCOL.md "Coalesced frames"): the frame
// one coalescing window sends to a connection that said `coalesce=1`, in each subprotocol, beside the frames a
// reader must split it into. The bytes come from the server's own path (a FrameWindow over the codecs' `msg` and
// `batch`), never from hand. The expected frames are written here from the protocol's rules, not decoded from
// those bytes, so a test that reads both checks the one against the other.
// `npm run vectors:coalesced` writes the file (the path is its argument); a unit test fails when it is stale
// (gateway/conformance/test/coalesced-vectors.test.ts).
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { FrameWindow } from "../src/fanout/coalesced-frames.js";
import type { Codec } from "../src/protocol/codec.js";
import { JSON_CODEC, MSGPACK_CODEC } from "../src/protocol/codecs.js";
import type { MsgMeta } from "../src/protocol/server-frames.js";

type Frame = Record<string, unknown>;
/** A fanout.v1 case: the text frame and the JSON frames it holds. */
export type JsonCase = { name: string; text: string; frames: Frame[] };
/** A fanout.v1.msgpack case: the binary frame's hex and the frames it holds (`{"$bytes": hex}`: a bin). */
export type MsgpackCase = { name: string; hex: string; frames: Frame[] };
export type CoalescedVectors = { about: string; json: JsonCase[]; msgpack: MsgpackCase[] };

export type Message = { meta: MsgMeta; payload: Buffer };

// A pretty-printed payload: its own line feeds, and `}\n{` escaped inside a string, must not split the frame.
const PRETTY = '{\n  "home": 1,\n  "away": {\n    "goals": 0\n  },\n  "note": "}\\n{"\n}';
const MESSAGES: Message[] = [
  { meta: { channel: "scores.42", pattern: "scores.*", seq: 1240, ts: 1764114000123.456 }, payload: Buffer.from(PRETTY) },
  {
    meta: { channel: "scores.42", pattern: "scores.*", seq: 1241, ts: 1764114000130, type: "image/png" },
    payload: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0x7d, 0x0a, 0x7b]),
  },
  { meta: { channel: "scores.7", pattern: "scores.*", seq: 1242, ts: 1764114000131.5 }, payload: Buffer.from('{"home":2,"away":0}') },
];

/** Twenty messages of a pattern (more than 15: a MessagePack array 16, header `dc 00 14`), as a busy window or a catch-up page sends them. */
export const MANY: Message[] = Array.from({ length: 20 }, (_, i) => ({
  meta: { channel: `scores.${i % 3}`, pattern: "scores.*", seq: 1300 + i, ts: 1764114001000 + i * 0.25 },
  payload: Buffer.from(JSON.stringify({ home: i, away: i % 2 })),
}));

const CASES: [name: string, messages: Message[]][] = [
  ["three messages in one window: a pretty-printed JSON payload, a binary payload with a type, a compact one", MESSAGES],
  ["one message in the window: the plain msg frame", [MESSAGES[2] as Message]],
  ["twenty messages in one window (more than 15: a MessagePack array 16)", MANY],
];

/** What one window of `messages` sends to `codec`'s coalesced sockets: the gateway's FrameWindow, flushed by hand. */
export function windowFrame(codec: Codec, messages: readonly Message[]): Uint8Array {
  const sent: Uint8Array[] = [];
  const c = new FrameWindow(
    1_000,
    65_536,
    (_, frame) => sent.push(frame),
    () => ({ cancel: () => undefined }),
  );
  for (const m of messages) c.add(codec, codec.msg(m.meta, m.payload));
  c.flush();
  if (sent.length !== 1) throw new Error(`a window sent ${sent.length} frames, not 1`);
  return sent[0] as Uint8Array;
}

const head = (m: MsgMeta): Frame => ({ op: "msg", channel: m.channel, sub: m.pattern, seq: m.seq, ts: m.ts });

/** The fanout.v1 frame of a message: JSON data parsed; bytes with a type in base64. */
const jsonFrame = ({ meta, payload }: Message): Frame =>
  meta.type === undefined
    ? { ...head(meta), data: JSON.parse(payload.toString("utf8")) as unknown }
    : { ...head(meta), enc: "base64", type: meta.type, data: payload.toString("base64") };

/** The fanout.v1.msgpack frame of a message: a JSON payload's bytes as a bin; bytes with a type as a bin, `enc: "binary"`. */
const msgpackFrame = ({ meta, payload }: Message): Frame => {
  const data = { $bytes: payload.toString("hex") };
  return meta.type === undefined ? { ...head(meta), data } : { ...head(meta), enc: "binary", type: meta.type, data };
};

export function coalescedVectors(): CoalescedVectors {
  return {
    about:
      'Coalesced frames (PROTOCOL.md "Coalesced frames"): what one coalescing window sends to a connection that connected with coalesce=1. json: the text frame (the msg frames byte for byte, joined by LF; split at each "}\\n{") and the frames it holds, as JSON.parse gives each part. msgpack: the hex of the binary frame (one MessagePack array of the msg maps) and the frames it holds; {"$bytes": hex} is a MessagePack bin. A window of one message sends the plain msg frame, so a reader takes both forms; more than 15 messages make a MessagePack array 16 (0xdc). A page of a catch-up sends the same frames. Written by `npm run vectors:coalesced` with the gateway\'s own coalescer and codecs; read by the gateway\'s tests (gateway/conformance/test/coalesced-vectors.test.ts), gateway/client/test/wire.test.ts and the Kotlin SDK\'s BinaryVectorsTest.',
    json: CASES.map(([name, ms]) => ({ name, text: Buffer.from(windowFrame(JSON_CODEC, ms)).toString("utf8"), frames: ms.map(jsonFrame) })),
    msgpack: CASES.map(([name, ms]) => ({ name, hex: Buffer.from(windowFrame(MSGPACK_CODEC, ms)).toString("hex"), frames: ms.map(msgpackFrame) })),
  };
}

/** The file's text: stable key order, two-space indent. */
export const coalescedText = (v: CoalescedVectors): string => `${JSON.stringify(v, null, 2)}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (!out) throw new Error("usage: node coalesced-vectors.js <path of coalesced-frames.json>");
  writeFileSync(out, coalescedText(coalescedVectors()));
  console.log(`wrote ${out}`);
}
