import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { isUtf8 } from "node:buffer";
import { isJsonBytes, isOneLineJson } from "../../src/protocol/json-check.js";

/** The reference: decode as UTF-8 and parse. */
const reference = (b: Uint8Array): boolean => {
  if (!isUtf8(b)) return false;
  try {
    JSON.parse(Buffer.from(b).toString("utf8"));
    return true;
  } catch {
    return false;
  }
};

describe("JSON check on bytes — same answer as JSON.parse", () => {
  it("json check — every JSON value, compact or spaced, is accepted", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.constantFrom(undefined, 1, "\t"), (v, space) => {
        expect(isJsonBytes(Buffer.from(JSON.stringify(v, null, space)))).toBe(true);
      }),
      { numRuns: 3_000 },
    );
  });

  it("json check — mutated JSON, random text and random bytes get JSON.parse's answer", () => {
    const mutated = fc
      .tuple(fc.jsonValue(), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom("replace", "insert", "delete"))
      .map(([v, at, byte, how]) => {
        const b = [...Buffer.from(JSON.stringify(v))];
        const i = b.length ? at % b.length : 0;
        if (how === "replace" && b.length) b[i] = byte;
        else if (how === "insert") b.splice(i, 0, byte);
        else b.splice(i, 1);
        return Buffer.from(b);
      });
    const text = fc.string({ unit: fc.constantFrom(...'{}[]",:0123456789.-+eE tfnrualsx\\/u\n\t'.split("")), maxLength: 24 }).map((s) => Buffer.from(s));
    const bytes = fc.uint8Array({ maxLength: 24 }).map((a) => Buffer.from(a));
    fc.assert(
      fc.property(fc.oneof(mutated, text, bytes), (b) => {
        expect(isJsonBytes(b)).toBe(reference(b));
      }),
      { numRuns: 20_000 },
    );
  });

  it("json check — edge cases: numbers, escapes, literals, control characters, deep nesting", () => {
    for (const s of [
      "0",
      "-0",
      "1e5",
      "1E+5",
      "-1.5e-3",
      "01",
      "1.",
      ".5",
      "-",
      "+1",
      "1e",
      '"\\u00e9"',
      '"\\u00g9"',
      '"\\x"',
      '"a\u0001b"',
      "true",
      "tru",
      "nulll",
      " [ ] ",
      '{"a":}',
      "[1,]",
      "{,}",
      '"é 漢字"',
      "[".repeat(1000) + "]".repeat(1000),
      "[".repeat(1000) + "]".repeat(999),
    ]) {
      expect(isJsonBytes(Buffer.from(s)), s.slice(0, 20)).toBe(reference(Buffer.from(s)));
    }
  });
});

describe("JSON check — one line of JSON (HTTP bodies stored as sent)", () => {
  it("json check — one line: JSON without a CR or LF byte; spaced JSON over lines, or not JSON, is not", () => {
    const b = (s: string) => Buffer.from(s);
    expect(isOneLineJson(b('{"a": 1, "b": [true, null]}'))).toBe(true);
    expect(isOneLineJson(b('"line\\nbreak escaped"'))).toBe(true);
    expect(isOneLineJson(b('{\n"a": 1}'))).toBe(false);
    expect(isOneLineJson(b('{"a": 1}\r'))).toBe(false);
    expect(isOneLineJson(b('{"a": 1'))).toBe(false);
    fc.assert(fc.property(fc.jsonValue(), (v) => isOneLineJson(b(JSON.stringify(v)))));
  });
});
