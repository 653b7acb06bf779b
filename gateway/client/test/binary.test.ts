// Binary payloads in the SDK: a message with a content type has `data` as a Uint8Array and `type`, whether
// fanout.v1 carried it in base64 or fanout.v1.msgpack as a bin; other messages are as before.
import { decode, encode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { toMessage } from "../src/delivery.js";
import type { Frame } from "../src/types.js";
import { JSON_WIRE, msgpackWire } from "../src/wire.js";

const BYTES = Uint8Array.from([0x89, 0x50, 0x00, 0xff, 0x7b, 0x7d]);
const message = (f: Frame) => toMessage(f, Number(f.seq), String(f.sub), false, () => undefined);
const head = { op: "msg", channel: "files.x", sub: "files.>", seq: 3, ts: 1.5 };

describe("binary payloads — the SDK", () => {
  it("binary — fanout.v1: base64 with a type becomes bytes (enc binary); base64 without a type stays as it was", () => {
    const text = JSON.stringify({ ...head, enc: "base64", type: "image/png", data: Buffer.from(BYTES).toString("base64") });
    const m = message(JSON_WIRE.decode(text)![0]!);
    expect(m.type).toBe("image/png");
    expect(m.enc).toBe("binary");
    expect(m.data).toBeInstanceOf(Uint8Array);
    expect([...(m.data as Uint8Array)]).toEqual([...BYTES]);
    const legacy = message(JSON_WIRE.decode(JSON.stringify({ ...head, enc: "base64", data: "AP8=" }))![0]!);
    expect(legacy).toMatchObject({ enc: "base64", data: "AP8=", type: undefined });
    expect(message(JSON_WIRE.decode(JSON.stringify({ ...head, data: { a: 1 } }))![0]!)).toMatchObject({ data: { a: 1 }, enc: undefined, type: undefined });
  });

  it("binary — fanout.v1.msgpack: a bin with a type is the bytes, not parsed", () => {
    const wire = msgpackWire({ encode, decode });
    const b = encode({ ...head, enc: "binary", type: "application/octet-stream", data: BYTES });
    const m = message(wire.decode(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer)![0]!);
    expect(m).toMatchObject({ enc: "binary", type: "application/octet-stream" });
    expect([...(m.data as Uint8Array)]).toEqual([...BYTES]);
  });
});
