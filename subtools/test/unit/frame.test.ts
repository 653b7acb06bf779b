import { describe, expect, it } from "vitest";
import { scanned, scanGatewayFrame, scanPayload } from "../../src/frame.js";
import { dataPayload, endPayload } from "../../src/shared/mod.js";

describe("frame — cheap payload reading", () => {
  it("frame — a padded data payload has the requested size and reads back", () => {
    const body = dataPayload("host-1-1:bench.x", 42, 1763750000123456.2, 300);
    expect(Buffer.byteLength(body)).toBe(300);
    expect(JSON.parse(body)).toMatchObject({ p: "host-1-1:bench.x", s: 42, t: 1763750000123456 });
    expect(scanPayload(body, 0)).toBe(true);
    expect([scanned.p, scanned.s, scanned.t, scanned.end]).toEqual(["host-1-1:bench.x", 42, 1763750000123456, false]);
  });

  it("frame — payloads smaller than their fields are not truncated", () => {
    const body = dataPayload("p", 1, 5, 0);
    expect(JSON.parse(body)).toEqual({ p: "p", s: 1, t: 5, x: "" });
  });

  it("frame — end markers read as end with their total", () => {
    expect(scanPayload(endPayload("p1", 77), 0)).toBe(true);
    expect([scanned.p, scanned.end, scanned.total]).toEqual(["p1", true, 77]);
  });

  it("frame — a gateway msg frame yields the payload, stream seq and channel", () => {
    const data = dataPayload("p2", 7, 1_000_000, 120);
    const frame = `{"op":"msg","channel":"bench.x","sub":"bench.*","seq":1234,"ts":1763750000123.456,"data":${data}}`;
    expect(scanGatewayFrame(frame)).toBe(1);
    expect([scanned.p, scanned.s, scanned.t, scanned.gwSeq, scanned.channel]).toEqual(["p2", 7, 1_000_000, 1234, "bench.x"]);
  });

  it("frame — fractional and reordered fields fall back to a full parse", () => {
    const frame = `{"data":{"x":"xx","t":1.5e3,"s":3,"p":"q"},"seq":9,"op":"msg","channel":"c"}`;
    expect(scanGatewayFrame(frame)).toBe(1);
    expect([scanned.p, scanned.s, scanned.t, scanned.gwSeq]).toEqual(["q", 3, 1500, 9]);
  });

  it("frame — control frames are left to the caller, foreign payloads are rejected", () => {
    expect(scanGatewayFrame('{"op":"ok","id":1}')).toBe(0);
    expect(scanGatewayFrame('{"op":"msg","channel":"c","seq":1,"ts":1,"data":{"hello":1}}')).toBe(-1);
    expect(scanPayload("not json", 0)).toBe(false);
    expect(scanPayload('{"p":"a","s":"x","t":1}', 0)).toBe(false);
  });
});
