import { describe, expect, it } from "vitest";
import { bytesOfHex, payloadFields, payloadMismatch, type ExpectedPayload } from "../payloads.js";

// The scenario language's payloads (payloads.ts): what the runner sends an adapter for `n` and `hex`, and
// the `expect: payloads` check, which must fail on a single wrong byte or a wrong type.
const b64 = (hex: string) => Buffer.from(hex, "hex").toString("base64");
const png = { seq: 1, bytes: b64("89504e4700ff"), type: "image/png" };
const json = { seq: 2, data: { n: 5 } };
const want: ExpectedPayload[] = [{ hex: "89504E4700FF", type: "image/png" }, { n: 5 }];

describe("conformance payloads — scenario fields and the payloads check", () => {
  it("conformance payloads — `hex` is sent as `bytes` in base64 beside its type, `n` as data {n}; bad hex is refused", () => {
    expect(payloadFields({ channel: "c", hex: "00ff7b", type: "image/png", msgId: "m" })).toEqual({
      channel: "c",
      bytes: "AP97",
      type: "image/png",
      msgId: "m",
    });
    expect(payloadFields({ channel: "c", n: 3 })).toEqual({ channel: "c", data: { n: 3 } });
    expect(payloadFields({ channel: "c", data: "as is" })).toEqual({ channel: "c", data: "as is" });
    expect(Array.from(bytesOfHex(""))).toEqual([]);
    expect(() => bytesOfHex("abc")).toThrow(/pairs of hex digits/);
    expect(() => bytesOfHex("zz")).toThrow(/pairs of hex digits/);
  });

  it("conformance payloads — the exact bytes and types, in order, pass (hex in any case)", () => {
    expect(payloadMismatch([png, json], want)).toBeUndefined();
  });

  it("conformance payloads — a wrong byte, a wrong or missing type, JSON for bytes, bytes for JSON or a count fails", () => {
    expect(payloadMismatch([{ ...png, bytes: b64("89504e4700fe") }, json], want)).toMatch(/message 1 .*has bytes 89504e4700fe, want 89504E4700FF/);
    expect(payloadMismatch([{ ...png, type: "image/gif" }, json], want)).toMatch(/has type "image\/gif", want "image\/png"/);
    expect(payloadMismatch([{ seq: 1, bytes: png.bytes }, json], want)).toMatch(/has type undefined/);
    expect(payloadMismatch([{ seq: 1, data: { n: 1 } }, json], want)).toMatch(/message 1 .*is not bytes/);
    expect(payloadMismatch([png, { ...json, bytes: b64("7b7d"), type: "text/plain" }], want)).toMatch(/message 2 .*is bytes, want the JSON/);
    expect(payloadMismatch([png, { seq: 2, data: { n: 6 } }], want)).toMatch(/message 2 .*has data \{"n":6\}/);
    expect(payloadMismatch([json, png], want)).toMatch(/message 1 .*is not bytes/);
    expect(payloadMismatch([png, json, json], want)).toMatch(/^3 messages, want 2/);
  });
});
