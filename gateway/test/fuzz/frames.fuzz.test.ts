import fc from "fast-check";
import { describe, expect, it } from "vitest";
// Shared generators (plain ESM; also drive the million-input run of scripts/fuzz.mjs).
// @ts-expect-error -- untyped .mjs module
import { channel, channelish, frameArbitraries, pattern, smallChannel, smallPattern } from "../../../scripts/fuzz/arbitraries.mjs";
import { CLIENT_OPS, parseClientFrame } from "../../src/protocol/frames.js";
import { checkChannel, checkPattern, matches, MAX_CHANNEL_LENGTH, MAX_CHANNEL_TOKENS } from "../../src/protocol/channel.js";
import { ErrorCode } from "../../src/protocol/codes.js";
import { patternCovers } from "../../src/auth/permissions.js";
import { encode } from "@msgpack/msgpack";
import { MSGPACK_CODEC } from "../../src/protocol/codecs.js";
import { validateClientFrame, type ParseResult } from "../../src/protocol/frames.js";
import { isBadItem } from "../../src/protocol/batch.js";

const RUNS = { numRuns: 2_000 };
const CODES = new Set<string>(Object.values(ErrorCode));
const OPS = new Set<string>(CLIENT_OPS);
// The generators are made from the parser's own op list: a new op without a generator throws here.
const { anyFrameText, malformedText, validFrame } = frameArbitraries(CLIENT_OPS);

/** `v` with every -0 made 0. */
const zeroed = (v: unknown): unknown =>
  Object.is(v, -0)
    ? 0
    : Array.isArray(v)
      ? v.map(zeroed)
      : typeof v === "object" && v !== null
        ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, zeroed(x)]))
        : v;

describe("fuzz — frame parser", () => {
  it("never throws: always ok with a known op, or a typed error with a message", () => {
    fc.assert(
      fc.property(anyFrameText, (text: string) => {
        const r = parseClientFrame(text);
        if (r.ok) expect(OPS.has(r.frame.op)).toBe(true);
        else {
          expect(CODES.has(r.code)).toBe(true);
          expect(typeof r.message).toBe("string");
          if (r.id !== undefined) expect(["number", "string"]).toContain(typeof r.id);
        }
      }),
      RUNS,
    );
  });

  it("generates frames of every op the parser has, and every op it generates parses", () => {
    const seen = new Set(fc.sample(validFrame, { numRuns: 2_000, seed: 7 }).map((f) => (f as { op: string }).op));
    expect([...seen].sort()).toEqual([...CLIENT_OPS].sort());
    expect(() => frameArbitraries([...CLIENT_OPS, "shout"])).toThrow(/no generator for \[shout\]/);
    expect(() => frameArbitraries(CLIENT_OPS.filter((op) => op !== "presence"))).toThrow(/no such op \[presence\]/);
  });

  it("round-trips every valid frame", () => {
    fc.assert(
      fc.property(validFrame, (f: Record<string, unknown>) => {
        const r = parseClientFrame(JSON.stringify(f));
        expect(r.ok).toBe(true);
        if (r.ok) expect(JSON.parse(JSON.stringify(r.frame))).toEqual(JSON.parse(JSON.stringify(f)));
      }),
      RUNS,
    );
  });

  it("a malformed frame that parses is still a valid frame (serializes and parses to the same)", () => {
    fc.assert(
      fc.property(malformedText, (text: string) => {
        const r = parseClientFrame(text);
        if (!r.ok) return;
        // A batch's bad item is kept in its place as the answer it gets ({code, message}), not as what the client
        // sent: such a frame does not serialize back to client input (`{"batch":[[]]}` came back bad_channel).
        if ("batch" in r.frame && r.frame.batch.some(isBadItem)) return;
        const again = parseClientFrame(JSON.stringify(r.frame));
        // -0 is written as 0 (the same number to every JSON reader); anything else must come back as it was.
        expect(zeroed(again)).toEqual(zeroed(r));
      }),
      RUNS,
    );
  });
});

/** Whether `v` has an own key `__proto__` at any depth (JSON.parse makes one; a string value "__proto__" is no key). Iterative: fuzzed frames nest deeper than the stack. */
function hasProtoKey(v: unknown): boolean {
  const todo = [v];
  for (let x = todo.pop(); todo.length > 0 || x !== undefined; x = todo.pop()) {
    if (typeof x !== "object" || x === null) continue;
    if (Object.hasOwn(x, "__proto__")) return true;
    todo.push(...Object.values(x));
  }
  return false;
}

/** Bytes through the fanout.v1.msgpack codec and the one validation, as the server takes a binary frame. */
function parseBinary(bytes: Uint8Array): ParseResult {
  const d = MSGPACK_CODEC.decode(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer, true);
  return d.ok ? validateClientFrame(d.value, d.mayNotFitJson) : { ok: false, code: d.code, message: d.message };
}

describe("fuzz — binary frames (fanout.v1.msgpack)", () => {
  it("never throws on any bytes: a known op, or a typed error with a message", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (bytes: Uint8Array) => {
        const r = parseBinary(bytes);
        if (r.ok) expect(OPS.has(r.frame.op)).toBe(true);
        else expect(CODES.has(r.code)).toBe(true);
      }),
      RUNS,
    );
  });

  it("a frame's MessagePack bytes parse to what its JSON text parses to", () => {
    fc.assert(
      fc.property(fc.oneof(validFrame, malformedText), (x: unknown) => {
        let f = x;
        if (typeof x === "string") {
          try {
            f = JSON.parse(x);
          } catch {
            return; // not JSON text: nothing to compare
          }
        }
        const text = typeof x === "string" ? x : JSON.stringify(f);
        let bytes: Uint8Array;
        try {
          bytes = encode(f, { maxDepth: 100_000 });
        } catch {
          return; // nested deeper than this test's encoder recurses (the gateway's decoder does not recurse)
        }
        // The MessagePack decoder refuses a map key __proto__ outright (a prototype-pollution guard).
        if (hasProtoKey(f)) expect(parseBinary(bytes)).toMatchObject({ ok: false, code: "bad_json" });
        else expect(zeroed(parseBinary(bytes))).toEqual(zeroed(parseClientFrame(text)));
      }),
      RUNS,
    );
  });
});

/** One MessagePack header built to allocate: an array or map declaring up to 2^32-1 elements, or a str/bin/ext declaring up to 2^32-1 bytes. */
const costlyHeader = fc.oneof(
  fc.record({ t: fc.constantFrom(0xdc, 0xde), n: fc.integer({ min: 0, max: 0xffff }) }).map(({ t, n }) => Buffer.from([t, n >> 8, n & 0xff])),
  fc
    .record({ t: fc.constantFrom(0xdd, 0xdf, 0xdb, 0xc6), n: fc.integer({ min: 0, max: 0xffffffff }) })
    .map(({ t, n }) => Buffer.concat([Buffer.from([t]), Buffer.from([n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff])])),
  fc.integer({ min: 0x90, max: 0x9f }).map((t) => Buffer.from([t])),
  fc.constantFrom(Buffer.from([0xc0]), Buffer.from([0x01]), Buffer.from([0xa1, 0x61])),
);
/** Frames of such headers: many levels (up to 25,000, as deep as 75 KB of headers), optionally behind a valid map start. */
const costlyFrame = fc
  .record({
    prefix: fc.constantFrom(Buffer.alloc(0), Buffer.from("82a26f70a3707562a464617461", "hex")),
    headers: fc.array(costlyHeader, { minLength: 1, maxLength: 64 }),
    repeat: fc.integer({ min: 1, max: 400 }),
  })
  .map(({ prefix, headers, repeat }) => {
    const body = Buffer.concat(headers);
    return Buffer.concat([prefix, ...Array.from({ length: repeat }, () => body)]);
  });

describe("fuzz — binary frames built to allocate", () => {
  it("frames of headers declaring large sizes or nesting deep are answered (refused or decoded) quickly, and the heap stays bounded", () => {
    global.gc?.();
    const heapBefore = process.memoryUsage().heapUsed;
    let slowest = 0;
    let refused = 0;
    fc.assert(
      fc.property(costlyFrame, (bytes: Buffer) => {
        const t = performance.now();
        const r = parseBinary(bytes);
        slowest = Math.max(slowest, performance.now() - t);
        if (!r.ok) refused++;
        expect(CODES.has(r.ok ? "bad_json" : r.code)).toBe(true);
        expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(256 * 1_048_576);
      }),
      { numRuns: 500 },
    );
    expect(refused).toBeGreaterThan(400);
    expect(slowest).toBeLessThan(250);
  });

  it("the issue's frame and its 8,000-per-level variant: bad_json, in well under a millisecond each, nothing allocated of their declared sizes", () => {
    const heapBefore = process.memoryUsage().heapUsed;
    for (const each of ["3ffc", "1f40"]) {
      const frame = Buffer.from(`dc${each}`.repeat(21_001), "hex");
      const t = performance.now();
      for (let i = 0; i < 20; i++) expect(parseBinary(frame)).toMatchObject({ ok: false, code: "bad_json" });
      expect(performance.now() - t).toBeLessThan(200);
    }
    expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(16 * 1_048_576);
  });
});

describe("fuzz — channel validator", () => {
  it("accepts generated channels and patterns; checkChannel ⇒ checkPattern", () => {
    fc.assert(
      fc.property(channel, (c: string) => checkChannel(c).ok && checkPattern(c).ok),
      RUNS,
    );
    fc.assert(
      fc.property(pattern, (p: string) => checkPattern(p).ok),
      RUNS,
    );
  });

  it("never throws on anything; what it accepts obeys every rule", () => {
    fc.assert(
      fc.property(fc.oneof(channelish, fc.string(), fc.anything()), (x: unknown) => {
        const c = checkChannel(x);
        const p = checkPattern(x);
        if (c.ok) expect(p.ok).toBe(true);
        for (const r of [c, p]) if (!r.ok) expect(r.reason.length).toBeGreaterThan(0);
        if (!p.ok) return;
        const s = x as string;
        const tokens = s.split(".");
        expect(s.length).toBeLessThanOrEqual(MAX_CHANNEL_LENGTH);
        expect(tokens.length).toBeLessThanOrEqual(MAX_CHANNEL_TOKENS);
        expect(s.startsWith("$")).toBe(false);
        expect(
          tokens.every(
            (t) => t.length > 0 && !/[\s\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/.test(t),
          ),
        ).toBe(true);
        expect(tokens.slice(0, -1).includes(">")).toBe(false);
        if (c.ok) expect(tokens.some((t) => t === "*" || t === ">")).toBe(false);
      }),
      RUNS,
    );
  });
});

describe("fuzz — permission matcher", () => {
  it("patternCovers agrees with matches() on random channels", () => {
    fc.assert(
      fc.property(smallPattern, smallPattern, smallChannel, (perm: string, q: string, c: string) => {
        if (patternCovers(perm, q) && matches(q, c)) expect(matches(perm, c)).toBe(true);
        // a concrete channel is a pattern matching only itself
        expect(patternCovers(perm, c)).toBe(matches(perm, c));
      }),
      RUNS,
    );
  });
});
