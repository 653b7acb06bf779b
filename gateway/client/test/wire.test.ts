// The SDK's wires (src/wire.ts): fanout.v1.msgpack against the shared binary vectors
// (gateway/conformance/vectors/binary-frames.json, which the gateway's codec and the Kotlin SDK read too),
// with @msgpack/msgpack as the application would pass it.
import { readFileSync } from "node:fs";
import { decode, encode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { connectTarget } from "../src/connection.js";
import { JSON_WIRE, msgpackWire, RAW, splitLines, type MsgRaw } from "../src/wire.js";

type Vector = { name: string; frame: Record<string, unknown>; hex: string };
const vectors = JSON.parse(readFileSync(new URL("../../conformance/vectors/binary-frames.json", import.meta.url), "utf8")) as Record<
  "server" | "client",
  Vector[]
>;
const cases = (kind: "server" | "client") => vectors[kind].map((v) => [v.name, v] as const);
// The shared coalesced frames (PROTOCOL.md "Coalesced frames"), written by the gateway's coalescer and codecs.
type Coalesced = { name: string; text?: string; hex?: string; frames: Record<string, unknown>[] };
const coalesced = JSON.parse(readFileSync(new URL("../../conformance/vectors/coalesced-frames.json", import.meta.url), "utf8")) as Record<
  "json" | "msgpack",
  Coalesced[]
>;
const coalescedCases = (kind: "json" | "msgpack") => coalesced[kind].map((v) => [v.name, v] as const);
const arrayBuffer = (hex: string): ArrayBuffer => {
  const bytes = Buffer.from(hex, "hex");
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
};
const wire = msgpackWire({ encode, decode });

/** The frame as the SDK hands it on: a `msg`'s JSON bytes parsed, text kept, other bytes as bytes. */
function expected(f: Record<string, unknown>): Record<string, unknown> {
  const d = f.data as { $bytes?: string } | undefined;
  if (f.op !== "msg" || typeof d?.$bytes !== "string") return f;
  const bytes = new Uint8Array(Buffer.from(d.$bytes, "hex"));
  return { ...f, data: f.enc === "binary" ? bytes : JSON.parse(Buffer.from(bytes).toString("utf8")) };
}

describe("wire — fanout.v1.msgpack and the shared vectors", () => {
  it.each(cases("server"))("wire — reads the server frame: %s", (_, v) => {
    expect(wire.decode(arrayBuffer(v.hex))).toEqual([expected(v.frame)]);
  });

  it.each(coalescedCases("json"))("wire — reads the shared coalesced JSON frame as its frames: %s", (_, v) => {
    expect(JSON_WIRE.decode(v.text as string)).toEqual(v.frames);
  });

  it.each(coalescedCases("msgpack"))("wire — reads the shared coalesced MessagePack frame as its frames: %s", (_, v) => {
    expect(wire.decode(arrayBuffer(v.hex as string))).toEqual(v.frames.map(expected));
  });

  it.each(cases("client"))("wire — writes the client frame: %s", (_, v) => {
    // A pub of bytes: the application passes a Uint8Array as data.
    const d = v.frame.data as { $bytes?: string } | undefined;
    const frame = typeof d?.$bytes === "string" ? { ...v.frame, data: new Uint8Array(Buffer.from(d.$bytes, "hex")) } : v.frame;
    expect(Buffer.from(wire.encode(frame) as Uint8Array).toString("hex")).toBe(v.hex);
  });

  it("wire — frames that cannot be decoded are undefined, in either wire", () => {
    expect(wire.decode(new Uint8Array([0xc1]).buffer)).toBeUndefined();
    expect(wire.decode("text")).toBeUndefined();
    expect(wire.decode(new Uint8Array(encode([1])).buffer)).toBeUndefined();
    expect(JSON_WIRE.decode("null")).toBeUndefined();
    expect(JSON_WIRE.decode('{"op":"pong"}')).toEqual([{ op: "pong" }]);
  });

  it("wire — the binary subprotocol is offered on every connect, with a token or without", () => {
    expect(connectTarget("ws://h/ws", undefined, "protocol", wire)).toEqual({ url: "ws://h/ws?coalesce=1", protocols: ["fanout.v1.msgpack"] });
    expect(connectTarget("ws://h/ws", "t", "protocol", wire)).toEqual({ url: "ws://h/ws?coalesce=1", protocols: ["fanout.v1.msgpack", "bearer.t"] });
    expect(connectTarget("ws://h/ws", "t", "query", wire)).toEqual({ url: "ws://h/ws?coalesce=1&token=t", protocols: ["fanout.v1.msgpack"] });
    expect(connectTarget("ws://h/ws", undefined, "protocol")).toEqual({ url: "ws://h/ws?coalesce=1" });
    expect(connectTarget("ws://h/ws", "t", "protocol")).toEqual({ url: "ws://h/ws?coalesce=1", protocols: ["fanout.v1", "bearer.t"] });
  });

  it("wire — a coalesced frame reads as its frames in order: JSON lines split at `}\\n{`, a MessagePack array; each keeps its own delta base", () => {
    const pretty = '{"op":"msg","channel":"a","sub":"a","seq":1,"ts":1,"data":{\n  "x": [{"y": "a\\n{b}"}, {}]\n}}';
    const text = `${pretty}\n{"op":"msg","channel":"a","sub":"a","seq":2,"ts":2,"data":2}\n{"op":"msg","channel":"a","sub":"a","seq":3,"ts":3,"data":"}\\n{"}`;
    expect(splitLines(text)).toHaveLength(3);
    expect(JSON_WIRE.decode(text)?.map((f) => [f.seq, f.data])).toEqual([
      [1, { x: [{ y: "a\n{b}" }, {}] }],
      [2, 2],
      [3, "}\n{"],
    ]);
    // A delta base is the frame's exact text: each part's is byte for byte the frame sent alone.
    const raw = (f: unknown) => (f as Record<symbol, MsgRaw | undefined>)[RAW];
    expect(JSON_WIRE.decode(text)?.map(raw)).toEqual(splitLines(text));
    expect(raw(JSON_WIRE.decode(pretty)?.[0])).toBe(pretty);
    const maps = [1, 2].map((seq) => ({ op: "msg", channel: "a", sub: "a", seq, ts: seq, data: new TextEncoder().encode(`{"n":${seq}}`) }));
    const bytes = encode(maps);
    const frames = wire.decode(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    expect(frames?.map((f) => [f.seq, f.data])).toEqual([
      [1, { n: 1 }],
      [2, { n: 2 }],
    ]);
    expect(frames?.map(raw)).toEqual(maps.map((m) => m.data));
  });
});
