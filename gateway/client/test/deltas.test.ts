// The SDK's per-channel delta bases, held to the shared Fossil vectors (gateway/conformance/vectors/fossil.json)
// that the Kotlin SDK's DeltasTest reads too, and to `msg` frames as the server builds them.
import { readFileSync } from "node:fs";
import { createDelta } from "fossil-delta";
import { describe, expect, it } from "vitest";
import {
  base64Decode,
  DeltaBases,
  deltaTargetSize,
  MAX_DELTA_CHANNELS,
  MAX_DELTA_TARGET_BYTES,
  payloadBytes,
  utf8Decode,
  utf8DecodeByHand,
  utf8Encode,
  utf8EncodeByHand,
} from "../src/deltas.js";
import type { Frame } from "../src/types.js";
import { deltaFrame as serverDeltaFrame, msgFrame } from "../../src/protocol/serialize.js";

type Bytes = { text: string } | { base64: string };
type Vectors = { cases: { name: string; base: Bytes; target: Bytes; delta: Bytes }[]; broken: { name: string; base: Bytes; delta: Bytes; why: string }[] };
const vectors = JSON.parse(readFileSync(new URL("../../conformance/vectors/fossil.json", import.meta.url), "utf8")) as Vectors;
const bytes = (v: Bytes): Uint8Array => ("text" in v ? utf8Encode(v.text) : base64Decode(v.base64));
const hex = (b: Uint8Array): string => Buffer.from(b).toString("hex");
const FOSSIL_DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~";
/** A number in Fossil's base 64. */
const fossilInt = (n: number): string => (n < 64 ? "" : fossilInt(Math.floor(n / 64))) + FOSSIL_DIGITS[n % 64]!;
/** Fossil's checksum: the sum of the bytes as big-endian 32-bit words, the last one padded with zeros. */
function fossilChecksum(b: Uint8Array): number {
  let sum = 0;
  for (let i = 0; i < b.length; i += 4) sum = (sum + (((b[i]! << 24) | ((b[i + 1] ?? 0) << 16) | ((b[i + 2] ?? 0) << 8) | (b[i + 3] ?? 0)) >>> 0)) >>> 0;
  return sum;
}
/**
 * A base that is a JSON string of `baseLetters` letters, and a valid delta (right commands, right checksum) that
 * copies those letters over and over into a JSON string of `size` bytes: a few bytes per copied base.
 */
function copyingDelta(baseLetters: number, size: number): { base: Uint8Array; delta: Uint8Array } {
  const copies: string[] = [];
  for (let left = size - 2; left > 0; left -= baseLetters) copies.push(`${fossilInt(Math.min(baseLetters, left))}@1,`);
  const target = new Uint8Array(size).fill(0x61);
  target[0] = target[size - 1] = 0x22;
  const delta = `${fossilInt(size)}\n1@0,${copies.join("")}1@${fossilInt(baseLetters + 1)},${fossilInt(fossilChecksum(target))};`;
  return { base: utf8Encode(`"${"a".repeat(baseLetters)}"`), delta: utf8Encode(delta) };
}

/** A frame as the client receives it: its text and what JSON.parse makes of it. */
const received = (text: string): [Frame, string] => [JSON.parse(text) as Frame, text];
const fullFrame = (channel: string, seq: number, payload: string | Uint8Array): [Frame, string] =>
  received(msgFrame({ channel, pattern: channel, seq, ts: 1_764_000_000_000 }, typeof payload === "string" ? Buffer.from(payload) : payload).toString("utf8"));
/** A delta frame as the server builds it. */
const deltaFrame = (channel: string, seq: number, base: number, delta: Uint8Array): [Frame, string] =>
  received(serverDeltaFrame({ channel, pattern: channel, seq, ts: 1_764_000_000_000 }, base, delta).toString("utf8"));

describe("deltas — the SDK's bases per channel", () => {
  it.each(vectors.cases.map((c) => [c.name, c] as const))("deltas — vector applies: %s", (_, c) => {
    const bases = new DeltaBases();
    bases.full("c", 1, bytes(c.base));
    const got = bases.apply("c", 2, 1, bytes(c.delta));
    expect(got.ok && hex(got.payload)).toBe(hex(bytes(c.target)));
  });

  it.each(vectors.broken.map((c) => [c.name, c] as const))("deltas — broken vector is refused, never applied: %s", (_, c) => {
    const bases = new DeltaBases();
    bases.full("c", 1, bytes(c.base));
    expect(bases.apply("c", 2, 1, bytes(c.delta))).toEqual({ ok: false, resubscribe: true, reason: "bad_delta" });
    expect(bases.apply("c", 3, 2, bytes(c.delta))).toMatchObject({ reason: "no_base" }); // the channel's base is gone
    // And from a delta frame as the server writes it (text, or base64 when the delta is not UTF-8).
    const framed = new DeltaBases();
    framed.full("c", 1, bytes(c.base));
    expect(framed.receive(...deltaFrame("c", 2, 1, bytes(c.delta)))).toEqual({ ok: false, resubscribe: true, reason: "bad_delta" });
  });

  it("deltas — the shared vectors hold every kind of refusal (so the tests above cannot pass on an empty list)", () => {
    const whys = new Set(vectors.broken.map((b) => b.why));
    expect(whys).toEqual(new Set(["truncated", "checksum", "copy", "insert", "size", "header", "operator", "garbage", "empty"]));
    expect(vectors.broken.filter((b) => b.why === "truncated").length).toBeGreaterThanOrEqual(6);
  });

  it("deltas — a full frame's base is the exact text the server spliced in, not JSON.stringify of the parsed value", () => {
    const stored = '{ "b": 1.50, "a": "\\u00e9" ,"z":[ ] }';
    const [f, text] = fullFrame("odd.json", 5, stored);
    expect(JSON.stringify(f.data)).not.toBe(stored);
    expect(Buffer.from(payloadBytes(f, text)).toString("utf8")).toBe(stored);
    const [t, tText] = fullFrame("odd.text", 6, "plain text, not JSON");
    expect([t.enc, utf8Decode(payloadBytes(t, tText))]).toEqual(["text", "plain text, not JSON"]);
    const binary = Uint8Array.from([0, 255, 128, 10]);
    const [b, bText] = fullFrame("odd.bin", 7, binary);
    expect([b.enc, hex(payloadBytes(b, bText))]).toEqual(["base64", hex(binary)]);
  });

  it("deltas — full, then deltas (text and base64) give each message's data; the bases follow the seqs", () => {
    const docs = ['{"score":[0,0],"minute":1,"team":"Zürich"}', '{"score":[1,0],"minute":2,"team":"Zürich"}', '{"score":[1,0],"minute":3,"team":"Zürích"}'];
    const bases = new DeltaBases();
    expect(bases.receive(...fullFrame("s", 10, docs[0]!))).toEqual({ ok: true, data: JSON.parse(docs[0]!) });
    const d1 = createDelta(utf8Encode(docs[0]!), utf8Encode(docs[1]!));
    expect(bases.receive(...deltaFrame("s", 12, 10, d1))).toEqual({ ok: true, data: JSON.parse(docs[1]!) });
    const d2 = createDelta(utf8Encode(docs[1]!), utf8Encode(docs[2]!));
    expect(bases.receive(...deltaFrame("s", 15, 12, d2))).toEqual({ ok: true, data: JSON.parse(docs[2]!) });
  });

  it("deltas — a delta whose base the client does not hold asks to resubscribe instead of showing wrong data", () => {
    const bases = new DeltaBases();
    const a = '{"v":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1"}';
    const b = '{"v":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa2"}';
    const d = createDelta(utf8Encode(a), utf8Encode(b));
    expect(bases.receive(...deltaFrame("s", 2, 1, d))).toEqual({ ok: false, resubscribe: true, reason: "no_base" }); // never had one
    bases.receive(...fullFrame("s", 1, a));
    expect(bases.receive(...deltaFrame("s", 3, 2, d))).toMatchObject({ reason: "no_base" }); // a gap: base 2 was missed
    bases.receive(...fullFrame("s", 1, a));
    bases.reset();
    expect(bases.receive(...deltaFrame("s", 2, 1, d))).toMatchObject({ reason: "no_base" }); // resubscribed: bases forgotten
  });

  it("deltas — past its bound the oldest channel's base is forgotten (its next delta asks to resubscribe)", () => {
    const bases = new DeltaBases(2);
    for (const [i, c] of ["c1", "c2", "c3"].entries()) bases.full(c, i + 1, utf8Encode("{}"));
    expect(bases.size).toBe(2);
    expect(bases.apply("c1", 9, 1, utf8Encode("2\n2:{};"))).toMatchObject({ reason: "no_base" });
  });

  it("deltas — a delta declaring more than the bound is refused before it is applied (the copies would make it)", () => {
    const doc = (n: number): string => JSON.stringify({ pad: "x".repeat(3_000), n });
    const d = createDelta(utf8Encode(doc(1)), utf8Encode(doc(2)));
    expect(deltaTargetSize(d)).toBe(doc(2).length);
    const tight = new DeltaBases(MAX_DELTA_CHANNELS, doc(2).length - 1);
    tight.full("c", 1, utf8Encode(doc(1)));
    expect(tight.apply("c", 2, 1, d)).toEqual({ ok: false, resubscribe: true, reason: "bad_delta" });
    const exact = new DeltaBases(MAX_DELTA_CHANNELS, doc(2).length);
    exact.full("c", 1, utf8Encode(doc(1)));
    expect(exact.apply("c", 2, 1, d)).toMatchObject({ ok: true });
    expect([deltaTargetSize(utf8Encode("~~~~~~~~~~~~\n")), deltaTargetSize(utf8Encode(":x")), deltaTargetSize(new Uint8Array(0))]).toEqual([Infinity, 0, 0]);
  });

  it("deltas — by default a valid delta of 500 bytes that makes 64 MiB + 1 is refused: bad_delta, nothing applied", () => {
    const { base, delta } = copyingDelta(1024 * 1024, MAX_DELTA_TARGET_BYTES + 1);
    expect(delta.length).toBeLessThan(600);
    const bases = new DeltaBases();
    bases.full("c", 1, base);
    expect(bases.apply("c", 2, 1, delta)).toEqual({ ok: false, resubscribe: true, reason: "bad_delta" });
  });

  it("deltas — the copying delta is valid: within a bound one byte larger it applies (so only the bound refuses it)", () => {
    const size = 64 * 1024 + 1;
    const { base, delta } = copyingDelta(4096, size);
    for (const [bound, ok] of [
      [size - 1, false],
      [size, true],
    ] as const) {
      const bases = new DeltaBases(MAX_DELTA_CHANNELS, bound);
      bases.full("c", 1, base);
      const got = bases.apply("c", 2, 1, delta);
      expect(got.ok && JSON.parse(utf8Decode(got.payload))).toBe(ok && "a".repeat(size - 2));
    }
  });

  it("deltas — UTF-8 and base64 by hand (hosts without TextEncoder, TextDecoder, atob) agree with the platform's", () => {
    const s = "aé€😀\u0000z";
    for (const [encode, decode] of [
      [utf8Encode, utf8Decode],
      [utf8EncodeByHand, utf8DecodeByHand],
    ] as const) {
      expect(hex(encode(s))).toBe(Buffer.from(s, "utf8").toString("hex"));
      expect(decode(Buffer.from(s, "utf8"))).toBe(s);
      for (const bad of [[0xc3], [0xa9], [0xe2, 0x82], [0xed, 0xa0, 0x80], [0xc0, 0x80], [0xf5, 0x80, 0x80, 0x80]])
        expect(() => decode(Uint8Array.from(bad))).toThrow();
    }
    for (const n of [0, 1, 2, 3, 4, 5, 64]) {
      const b = Uint8Array.from({ length: n }, (_, i) => (i * 37 + 11) & 0xff);
      expect(hex(base64Decode(Buffer.from(b).toString("base64")))).toBe(hex(b));
    }
  });
});
