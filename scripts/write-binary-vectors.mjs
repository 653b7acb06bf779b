// Writes gateway/conformance/vectors/binary-frames.json: frames of fanout.v1.msgpack as hex bytes beside the
// frame as JSON, for every SDK's tests and the gateway's (PROTOCOL.md "Subprotocols"). The bytes are
// @msgpack/msgpack's encoding of each frame object, keys in the order written here (the JSON frame's);
// the gateway's codec and each SDK must produce and read exactly these bytes. Run by hand after changing a
// frame: node scripts/write-binary-vectors.mjs
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { encode } from "@msgpack/msgpack";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bytes = (b) => ({ $bytes: Buffer.from(b).toString("hex") });
const json = (v) => bytes(Buffer.from(JSON.stringify(v)));

/** A frame with `{"$bytes": hex}` for MessagePack bin values, as the encoder takes it. */
function toValue(v) {
  if (Array.isArray(v)) return v.map(toValue);
  if (v && typeof v === "object") {
    if (typeof v.$bytes === "string") return Buffer.from(v.$bytes, "hex");
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toValue(x)]));
  }
  return v;
}

const server = [
  ["msg, JSON payload", { op: "msg", channel: "prices.ABC", sub: "prices.*", seq: 1234567, ts: 1764114000123.456, data: json({ sym: "ABC", price: 12.5 }) }],
  ["msg, whole-millisecond ts", { op: "msg", channel: "a", sub: "a", seq: 1, ts: 1764114000123, data: json([1, "x", null]) }],
  [
    "msg, durable redelivery",
    { op: "msg", channel: "jobs.x", sub: "jobs.>", seq: 70000, ts: 1.5, durable: "workers", redelivered: true, deliveries: 2, data: json({ job: 7 }) },
  ],
  ["msg, UTF-8 payload that is not JSON", { op: "msg", channel: "raw", sub: "raw", seq: 9, ts: 2.25, enc: "text", data: "plain text, é" }],
  ["msg, bytes that are not UTF-8", { op: "msg", channel: "raw", sub: "raw", seq: 10, ts: 3, enc: "binary", data: bytes([0x00, 0xff, 0xfe, 0x80]) }],
  [
    "msg, binary payload with a content type",
    { op: "msg", channel: "files.x", sub: "files.>", seq: 11, ts: 4, enc: "binary", type: "image/png", data: bytes([0x89, 0x50, 0x4e, 0x47, 0x7b, 0x7d]) },
  ],
  ["ok of a sub", { op: "ok", id: 1, epoch: "Zk3v1a", firstSeq: 1, lastSeq: 42 }],
  ["ok of a pub, string id", { op: "ok", id: "p-7", seq: 43, duplicate: false }],
  [
    "ok of a batch pub",
    {
      op: "ok",
      id: 4,
      results: [
        { seq: 44, duplicate: false },
        { error: "forbidden", message: "no permission to publish to b", temporary: false },
      ],
    },
  ],
  ["err", { op: "err", id: 3, code: "bad_channel", message: "a channel has no empty tokens", temporary: false }],
  ["err without id", { op: "err", code: "slow_consumer", message: "a.b: the client read too slowly", temporary: true }],
  ["pong", { op: "pong", id: 5, time: 1764114000123.5 }],
  ["live", { op: "live", sub: "prices.*", seq: 1234567 }],
  ["server-side subscription", { op: "sub", channel: "inbox.u1.>", auto: true, seq: 0, epoch: "Zk3v1a" }],
  ["unsub by the server", { op: "unsub", channel: "a.b", reason: "removed by an operator" }],
  ["join", { op: "join", channel: "room.1", client: "c1", user: "alice", info: { name: "Alice", n: -3 } }],
  ["leave, anonymous", { op: "leave", channel: "room.1", client: "c2", user: null }],
  ["presence list", { op: "presence", id: 8, channel: "room.1", members: [{ client: "c1", user: "alice", joinedAt: 1764114000123 }], truncated: false }],
];

const client = [
  ["sub from a position", { op: "sub", id: 1, channel: "prices.*", from: { seq: 43, epoch: "Zk3v1a" } }],
  ["sub with presence", { op: "sub", id: 2, channel: "room.1", presence: true, info: { name: "Alice" } }],
  ["durable sub", { op: "sub", id: 3, channel: "jobs.>", durable: "workers", ack: true, maxInflight: 10 }],
  ["pub", { op: "pub", id: 4, channel: "prices.ABC", data: { price: 12.5, tags: ["a", "b"], ok: true, none: null }, msgId: "m-1" }],
  [
    "pub batch",
    {
      op: "pub",
      id: "b1",
      batch: [
        { channel: "a", data: 1 },
        { channel: "b", data: "two", ttl: "30s" },
      ],
    },
  ],
  ["pub of bytes", { op: "pub", id: 11, channel: "files.x", data: bytes([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]), type: "image/png" }],
  ["ack", { op: "ack", seq: 70000, sub: "jobs.>" }],
  ["nak with delay", { op: "nak", id: 6, seq: 70001, delay: 5000 }],
  ["ping", { op: "ping", id: 7 }],
  ["unsub", { op: "unsub", id: 8, channel: "prices.*" }],
  ["presence", { op: "presence", id: 9, channel: "room.1" }],
  ["refresh", { op: "refresh", id: 10, token: "eyJhbGciOiJIUzI1NiJ9.e30.x" }],
];

const vector = ([name, frame]) => ({ name, frame, hex: Buffer.from(encode(toValue(frame))).toString("hex") });
const file = {
  about:
    'Shared test vectors of fanout.v1.msgpack (PROTOCOL.md "Subprotocols"): each frame as JSON and as the hex of its one binary WebSocket frame. A value {"$bytes": hex} is a MessagePack bin. "server": what the gateway sends (its codec must write these bytes; an SDK must read them); "client": what an SDK sends (it must write these bytes; the gateway must accept them). Keys are in the order shown; integers take the smallest MessagePack int format, other numbers float64. Written by scripts/write-binary-vectors.mjs; read by gateway/test/unit/msgpack-codec.test.ts, gateway/client/test/wire.test.ts and the Kotlin SDK.',
  server: server.map(vector),
  client: client.map(vector),
};
writeFileSync(join(root, "gateway/conformance/vectors/binary-frames.json"), `${JSON.stringify(file, null, 2)}\n`);
