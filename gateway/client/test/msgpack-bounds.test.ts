// The SDK's MessagePack pre-scan (src/msgpack-bounds.ts, a small copy of the gateway's) against the shared vectors
// (gateway/conformance/vectors/msgpack-bounds.json), and the wire refusing a hostile server's frame before the
// application's MessagePack library sees it.
import { readFileSync } from "node:fs";
import { decode, encode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { MAX_SERVER_FRAME_DEPTH, msgpackFits } from "../src/msgpack-bounds.js";
import { msgpackWire } from "../src/wire.js";

type Vector = { name: string; hex: string; repeat?: number; maxDepth?: number; expect: "ok" | "malformed" | "depth" };
const vectors = (JSON.parse(readFileSync(new URL("../../conformance/vectors/msgpack-bounds.json", import.meta.url), "utf8")) as { frames: Vector[] }).frames;
const bytesOf = (v: Vector): Buffer => Buffer.from(v.hex.repeat(v.repeat ?? 1), "hex");
const arrayBuffer = (b: Uint8Array): ArrayBuffer => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

describe("msgpack bounds — the SDK's pre-scan", () => {
  it("msgpack bounds — agrees with @msgpack/msgpack on every type byte followed by 0 to 17 zero bytes", () => {
    for (let t = 0; t < 256; t++)
      for (let tail = 0; tail <= 17; tail++) {
        const b = Buffer.concat([Buffer.from([t]), Buffer.alloc(tail)]);
        let ok = true;
        try {
          decode(b);
        } catch {
          ok = false;
        }
        expect(msgpackFits(b), `0x${t.toString(16)} + ${tail}`).toBe(ok);
      }
  });

  it.each(vectors.map((v) => [v.name, v] as const))("msgpack bounds — %s", (_, v) => {
    // The vectors' default cap is the gateway's (64) for client frames.
    expect(msgpackFits(bytesOf(v), v.maxDepth ?? 64)).toBe(v.expect === "ok");
  });

  it("msgpack bounds — the wire refuses the issue's frame without handing it to the library, in bounded memory", () => {
    let calls = 0;
    const wire = msgpackWire({ encode, decode: (b) => (calls++, decode(b)) });
    const hostile = arrayBuffer(Buffer.from("dc3ffc".repeat(21_001), "hex"));
    const heap = process.memoryUsage().heapUsed;
    for (let i = 0; i < 50; i++) expect(wire.decode(hostile)).toBeUndefined();
    expect(process.memoryUsage().heapUsed - heap).toBeLessThan(16 * 1_048_576);
    expect(calls).toBe(0);
    // A server frame as deep as the server's encoder writes (100 levels) is read; one level more is not.
    const okFrame = (levels: number) => arrayBuffer(Buffer.from(`82a26f70a26f6ba464617461${"91".repeat(levels - 1)}c0`, "hex"));
    expect(wire.decode(okFrame(MAX_SERVER_FRAME_DEPTH + 1))).toBeUndefined();
    expect(wire.decode(okFrame(MAX_SERVER_FRAME_DEPTH))).toHaveLength(1);
    expect(calls).toBe(1);
  });
});
