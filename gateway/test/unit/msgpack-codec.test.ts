// The gateway's fanout.v1.msgpack codec (protocol/msgpack-codec.ts) against the shared vectors
// (gateway/conformance/vectors/binary-frames.json, which the SDKs read too): it writes exactly their server
// frames and accepts their client frames as the same frames fanout.v1 would.
import { readFileSync } from "node:fs";
import { encode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { MSGPACK_CODEC } from "../../src/protocol/codecs.js";
import { parseClientFrame, validateClientFrame } from "../../src/protocol/frames.js";
import type { MsgMeta, ServerFrame } from "../../src/protocol/server-frames.js";

type Vector = { name: string; frame: Record<string, unknown>; hex: string };
const vectors = JSON.parse(readFileSync(new URL("../../conformance/vectors/binary-frames.json", import.meta.url), "utf8")) as Record<
  "server" | "client",
  Vector[]
>;
const cases = (kind: "server" | "client") => vectors[kind].map((v) => [v.name, v] as const);
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");
const buf = (h: string): ArrayBuffer => {
  const b = Buffer.from(h, "hex");
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
};
const bytesOf = (v: unknown): Buffer => Buffer.from((v as { $bytes: string }).$bytes, "hex");

/** A server vector as the codec is called: `msg` from metadata and stored payload, the rest as a ServerFrame. */
function encodeVector(f: Record<string, unknown>): Uint8Array {
  if (f.op !== "msg") {
    const { op, id, ...rest } = f;
    const value = (op === "ok" ? { op, id, fields: rest } : f) as ServerFrame;
    return MSGPACK_CODEC.encode(value) as Uint8Array;
  }
  const meta: MsgMeta = { channel: f.channel as string, pattern: f.sub as string, seq: f.seq as number, ts: f.ts as number };
  if (typeof f.type === "string") meta.type = f.type;
  if (typeof f.durable === "string") meta.durable = { name: f.durable, ...(f.redelivered ? { redelivered: true, deliveries: f.deliveries as number } : {}) };
  const payload = f.enc === "text" ? Buffer.from(f.data as string) : bytesOf(f.data);
  return MSGPACK_CODEC.msg(meta, payload);
}

describe("msgpack codec — the shared binary vectors", () => {
  it.each(cases("server"))("msgpack codec — writes the server frame: %s", (_, v) => {
    expect(hex(encodeVector(v.frame))).toBe(v.hex);
  });

  it.each(cases("client"))("msgpack codec — accepts the client frame as fanout.v1 would: %s", (_, v) => {
    const d = MSGPACK_CODEC.decode(buf(v.hex), true);
    if (!d.ok) throw new Error(d.message);
    // Bytes ({"$bytes": hex}, a bin) are what fanout.v1 sends as base64 with enc; compared as bytes.
    const data = v.frame.data as { $bytes?: string } | undefined;
    const json = typeof data?.$bytes === "string" ? { ...v.frame, enc: "base64", data: bytesOf(data).toString("base64") } : v.frame;
    const asBytes = (r: ReturnType<typeof parseClientFrame>) => {
      if (!r.ok || !("data" in r.frame) || !(r.frame.data instanceof Uint8Array)) return r;
      return { ...r, frame: { ...r.frame, data: Buffer.from(r.frame.data).toString("hex") } };
    };
    expect(asBytes(validateClientFrame(d.value, d.mayNotFitJson))).toEqual(asBytes(parseClientFrame(JSON.stringify(json))));
  });

  it("msgpack codec — a page of msg frames is the frames one by one", () => {
    const messages = [1, 2].map((seq) => ({ channel: "c.x", seq, ts: seq + 0.5, payload: Buffer.from(`{"s":${seq}}`) }));
    const page = MSGPACK_CODEC.msgs("c.*", messages).map(hex);
    expect(page).toEqual(messages.map((m) => hex(MSGPACK_CODEC.msg({ channel: m.channel, pattern: "c.*", seq: m.seq, ts: m.ts }, m.payload))));
  });

  it("msgpack codec — refuses text frames, bytes that are not one MessagePack value, and values JSON cannot store", () => {
    expect(MSGPACK_CODEC.decode(buf(Buffer.from('{"op":"ping"}').toString("hex")), false)).toMatchObject({ ok: false, code: "bad_json" });
    expect(MSGPACK_CODEC.decode(buf("c1"), true)).toMatchObject({ ok: false, code: "bad_json" });
    expect(MSGPACK_CODEC.decode(buf(`${hex(encode({ op: "ping" }))}00`), true)).toMatchObject({ ok: false, code: "bad_json" });
    const check = (value: unknown) => {
      const d = MSGPACK_CODEC.decode(buf(hex(encode(value))), true);
      if (!d.ok) throw new Error(d.message);
      return validateClientFrame(d.value, d.mayNotFitJson);
    };
    expect(check([{ op: "ping" }])).toMatchObject({ ok: false, code: "bad_json" });
    // Bytes as a pub's data are a binary payload; bytes inside a JSON value are not JSON.
    expect(check({ op: "pub", id: 1, channel: "a", data: new Uint8Array([1]) })).toMatchObject({ ok: true, frame: { type: "application/octet-stream" } });
    expect(check({ op: "pub", id: 1, channel: "a", data: [new Uint8Array([1])] })).toMatchObject({ ok: false, code: "bad_request", id: 1 });
    expect(check({ op: "pub", id: 2, channel: "a", data: { when: new Date(0) } })).toMatchObject({ ok: false, code: "bad_request", id: 2 });
    expect(check({ op: "pub", id: 3, channel: "a", data: [NaN] })).toMatchObject({ ok: false, code: "bad_request", id: 3 });
    expect(check({ op: "pub", id: 4, channel: "a", data: { deep: [[{ x: 1.5 }]] } })).toMatchObject({ ok: true });
  });
});
