// The MessagePack pre-scan (protocol/msgpack-bounds.ts) against the shared vectors
// (gateway/conformance/vectors/msgpack-bounds.json, which the TypeScript SDK reads too), the codec's answers
// for what it refuses, and the JSON depth scan (protocol/depth.ts) that holds fanout.v1 to the same depth.
import { readFileSync } from "node:fs";
import { decode, encode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { JSON_CODEC, MSGPACK_CODEC } from "../../src/protocol/codecs.js";
import { jsonNestsDeeper, MAX_FRAME_DEPTH, TOO_DEEP } from "../../src/protocol/depth.js";
import { msgpackBounds } from "../../src/protocol/msgpack-bounds.js";

type Vector = { name: string; hex: string; repeat?: number; maxDepth?: number; expect: "ok" | "malformed" | "depth" };
const vectors = (JSON.parse(readFileSync(new URL("../../conformance/vectors/msgpack-bounds.json", import.meta.url), "utf8")) as { frames: Vector[] }).frames;
const bytesOf = (v: Vector): Buffer => Buffer.from(v.hex.repeat(v.repeat ?? 1), "hex");
const buf = (b: Uint8Array): ArrayBuffer => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
const nested = (depth: number): unknown => {
  let v: unknown = [];
  for (let i = 1; i < depth; i++) v = [v];
  return v;
};

describe("msgpack bounds — the shared vectors", () => {
  it.each(vectors.map((v) => [v.name, v] as const))("msgpack bounds — %s", (_, v) => {
    const r = msgpackBounds(bytesOf(v), v.maxDepth);
    expect(r?.kind ?? "ok").toBe(v.expect);
    if (r) expect(r.message.length).toBeGreaterThan(0);
  });

  it("msgpack bounds — every frame it accepts decodes; every small one it calls malformed the library refuses too", () => {
    for (const v of vectors) {
      if (v.repeat !== undefined) continue; // built to allocate: never handed to the library here
      const b = bytesOf(v);
      if (v.expect === "ok") expect(() => decode(b), v.name).not.toThrow();
      if (v.expect === "malformed") expect(() => decode(b), v.name).toThrow();
    }
  });

  it("msgpack bounds — covers every type byte: each one's smallest value passes or is refused as the library does", () => {
    for (let t = 0; t < 256; t++) {
      // The type byte followed by enough zeros for any fixed-size value: only a length or count of 0 follows.
      for (let tail = 0; tail <= 17; tail++) {
        const b = Buffer.concat([Buffer.from([t]), Buffer.alloc(tail)]);
        let libraryOk = true;
        try {
          decode(b);
        } catch {
          libraryOk = false;
        }
        expect(msgpackBounds(b) === undefined, `0x${t.toString(16)} + ${tail} zeros`).toBe(libraryOk);
      }
    }
  });

  it("msgpack bounds — a frame of real values at every depth up to the cap passes; one level more is too deep", () => {
    expect(msgpackBounds(encode({ op: "pub", channel: "a", data: nested(MAX_FRAME_DEPTH - 1) }))).toBeUndefined();
    expect(msgpackBounds(encode({ op: "pub", channel: "a", data: nested(MAX_FRAME_DEPTH) }))?.kind).toBe("depth");
  });

  it("msgpack bounds — the issue's 63,003-byte frame is refused in well under a millisecond per kilobyte, allocating nothing of its declared sizes", () => {
    const frame = Buffer.from("dc3ffc".repeat(21_001), "hex");
    const heap = process.memoryUsage().heapUsed;
    const t = performance.now();
    for (let i = 0; i < 100; i++) expect(msgpackBounds(frame)?.kind).toBe("malformed");
    expect(performance.now() - t).toBeLessThan(500);
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(16 * 1_048_576);
  });
});

describe("msgpack bounds — the codec's answers", () => {
  it("msgpack bounds — declared sizes beyond the frame are bad_json naming the header; too deep is bad_request", () => {
    const issue = MSGPACK_CODEC.decode(buf(Buffer.from("dc3ffc".repeat(21_001), "hex")), true);
    expect(issue).toMatchObject({ ok: false, code: "bad_json" });
    expect(!issue.ok && issue.message).toMatch(/^frame is not one valid MessagePack value: an array of 16380 elements at byte \d+ declares more than/);
    const deep = MSGPACK_CODEC.decode(buf(encode({ op: "pub", channel: "a", data: nested(MAX_FRAME_DEPTH) })), true);
    expect(deep).toEqual({ ok: false, code: "bad_request", message: TOO_DEEP });
    expect(MSGPACK_CODEC.decode(buf(encode({ op: "pub", channel: "a", data: nested(MAX_FRAME_DEPTH - 1) })), true).ok).toBe(true);
  });

  it("msgpack bounds — fanout.v1 holds JSON frames to the same depth", () => {
    const text = (d: number) => Buffer.from(JSON.stringify({ op: "pub", channel: "a", data: nested(d) }));
    expect(JSON_CODEC.decode(buf(text(MAX_FRAME_DEPTH - 1)), false).ok).toBe(true);
    expect(JSON_CODEC.decode(buf(text(MAX_FRAME_DEPTH)), false)).toEqual({ ok: false, code: "bad_request", message: TOO_DEEP });
    // 101 deep, as the issue's presence info was.
    const info = Buffer.from(JSON.stringify({ op: "sub", channel: "a", presence: true, info: nested(101) }));
    expect(JSON_CODEC.decode(buf(info), false)).toMatchObject({ ok: false, code: "bad_request" });
  });

  it("msgpack bounds — the JSON depth scan counts brackets outside strings only", () => {
    expect(jsonNestsDeeper('{"a":"[[[[[[","b":"\\"[[[[["}', 1)).toBe(false);
    expect(jsonNestsDeeper('{"a":[{}]}', 2)).toBe(true);
    expect(jsonNestsDeeper('{"a":[{}]}', 3)).toBe(false);
    expect(jsonNestsDeeper("[]".repeat(1_000), 1)).toBe(false);
  });
});
