import { describe, expect, it } from "vitest";
import { hasHugeNumber, hasInfinite } from "../../src/protocol/json-numbers.js";
import { parseClientFrame } from "../../src/protocol/frames.js";

const check = (text: string) => hasHugeNumber(text, JSON.parse(text));

describe("json numbers beyond a double", () => {
  it("json numbers — a number JSON.parse makes infinite is found, at any depth", () => {
    expect(check("[1e999]")).toBe(true);
    expect(check('{"a":{"b":[0,-16821025364160522e+308]}}')).toBe(true);
    expect(check(`[${"9".repeat(400)}]`)).toBe(true);
    expect(check(`${"[".repeat(5000)}1e400${"]".repeat(5000)}`)).toBe(true);
  });

  it("json numbers — large, tiny and look-alike values are kept", () => {
    expect(check("[1e100, 1.7976931348623157e308, -1e307]")).toBe(false);
    expect(check("[1e-999, 0.0000001]")).toBe(false); // underflows to 0, which round-trips
    expect(check('{"s":"1e999","t":"' + "9".repeat(400) + '"}')).toBe(false); // in strings: text, not numbers
    expect(hasInfinite({ a: [1, "x", null, { b: 2 }] })).toBe(false);
  });

  it("json numbers — the frame parser refuses such a frame (bad_request, with its id) instead of storing null", () => {
    // The fuzz property's counterexample: the number became Infinity, then null when the frame was encoded.
    const text =
      '{"op":"pub","id":-1000000000,"channel":"aa.aaa😀a.aaaaaaa.aaaa😀aaa","data":["\\"  ",false,-5.354708962782601e-241,16821025364160522e+308,null],"msgId":"!!!!!!!!!!"}';
    expect(parseClientFrame(text)).toMatchObject({ ok: false, code: "bad_request", id: -1000000000 });
    expect(parseClientFrame('{"op":"pub","channel":"a.b","batch":[{"channel":"a.b","data":1e999}]}')).toMatchObject({ ok: false, code: "bad_request" });
    expect(parseClientFrame('{"op":"pub","channel":"a.b","data":1e300}')).toMatchObject({ ok: true });
  });
});
