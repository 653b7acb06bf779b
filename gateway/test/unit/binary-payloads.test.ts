// Binary payloads (bytes with a content type) in the codecs, the header parser and the publish item parser.
import { decode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { parseJsHeaders } from "../../src/broker/jetstream/headers.js";
import { FramePage } from "../../src/fanout/replay-cache.js";
import { parsePublishItem } from "../../src/protocol/batch.js";
import { JSON_CODEC, MSGPACK_CODEC } from "../../src/protocol/codecs.js";
import { checkContentType, storedType } from "../../src/protocol/content-type.js";
import { parseClientFrame, validateClientFrame } from "../../src/protocol/frames.js";
import { buildFrames, dataFields, msgFrame } from "../../src/protocol/serialize.js";

const JSONISH = Buffer.from('{"a":1}');
const meta = { channel: "c", pattern: "c", seq: 7, ts: 1.5 };
const text = (b: Uint8Array) => Buffer.from(b).toString("utf8");

describe("binary payloads — frames", () => {
  it("binary — a typed payload is base64 with its type in JSON (live, page and history), bytes with enc binary in MessagePack, even when it is JSON text", () => {
    const want = `{"op":"msg","channel":"c","sub":"c","seq":7,"ts":1.5,"enc":"base64","type":"image/png","data":"${JSONISH.toString("base64")}"}`;
    expect(text(msgFrame({ ...meta, type: "image/png" }, JSONISH))).toBe(want);
    const verbatim: boolean[] = [];
    const page = buildFrames("c", [{ channel: "c", seq: 7, ts: 1.5, payload: JSONISH, type: "image/png" }], verbatim);
    expect(text(page[0]!)).toBe(want);
    expect(verbatim).toEqual([false]);
    expect(dataFields(JSONISH, "image/png")).toBe(`"enc":"base64","type":"image/png","data":"${JSONISH.toString("base64")}"`);
    // Without a type: today's frame, the JSON spliced in.
    expect(text(msgFrame(meta, JSONISH))).toBe('{"op":"msg","channel":"c","sub":"c","seq":7,"ts":1.5,"data":{"a":1}}');
    const m = decode(MSGPACK_CODEC.msg({ ...meta, type: "image/png" }, JSONISH)) as Record<string, unknown>;
    expect(Object.keys(m)).toEqual(["op", "channel", "sub", "seq", "ts", "enc", "type", "data"]);
    expect(m).toMatchObject({ enc: "binary", type: "image/png" });
    expect(Buffer.from(m.data as Uint8Array)).toEqual(JSONISH);
  });

  it("binary — a replay page keeps the type for another codec's frames (built from its copy of the payload)", () => {
    const page = new FramePage("c", 1, 2, [{ channel: "c", seq: 1, ts: 1, payload: JSONISH, type: "application/x-y" }], () => undefined);
    expect(JSON.parse(text(page.items[0]!.frame.frame(JSON_CODEC)))).toMatchObject({ enc: "base64", type: "application/x-y" });
    const m = decode(page.items[0]!.frame.frame(MSGPACK_CODEC)) as Record<string, unknown>;
    expect(m).toMatchObject({ enc: "binary", type: "application/x-y" });
    expect(Buffer.from(m.data as Uint8Array)).toEqual(JSONISH);
  });
});

describe("binary payloads — stored header and content types", () => {
  it("binary — Fanout-Content-Type is read from a message's own headers; application/json and empty are no type", () => {
    const h = (type: string) =>
      Buffer.from(
        `NATS/1.0\r\nFanout-Content-Type: ${type}\r\nNats-Stream: FANOUT_CHANNELS\r\nNats-Subject: ev.c\r\nNats-Sequence: 3\r\nNats-Time-Stamp: 2026-11-22T18:02:18.4Z\r\nNats-Last-Sequence: 2\r\n\r\n`,
      );
    expect(parseJsHeaders(h("Image/PNG"), h("Image/PNG").length)).toMatchObject({ seq: 3, subject: "ev.c", type: "image/png" });
    expect(parseJsHeaders(h("application/json"), h("application/json").length)).not.toHaveProperty("type");
    expect(storedType("")).toBeUndefined();
    expect(storedType(" text/plain ")).toBe("text/plain");
  });

  it("binary — content types a publisher may give: media types only, never JSON's, nothing that could break a header", () => {
    expect(checkContentType("application/vnd.foo+cbor")).toEqual({ ok: true, type: "application/vnd.foo+cbor" });
    for (const bad of ["application/json", "nope", "a/b\r\nX: y", "a/b c", "", 1, `a/${"b".repeat(70)}`]) expect(checkContentType(bad).ok).toBe(false);
  });
});

describe("binary payloads — publishing bytes", () => {
  it("binary — a bin is bytes of application/octet-stream (or its type), copied out of the frame; base64 with enc likewise; a type without bytes is refused", () => {
    const frame = Uint8Array.from([9, 1, 2, 3, 9]);
    const view = frame.subarray(1, 4);
    const item = parsePublishItem({ channel: "c", data: view });
    expect(item).toMatchObject({ channel: "c", type: "application/octet-stream" });
    frame.fill(0);
    expect(Buffer.from((item as { data: Uint8Array }).data)).toEqual(Buffer.from([1, 2, 3]));
    expect(parsePublishItem({ channel: "c", data: view, type: "image/png" })).toMatchObject({ type: "image/png" });
    const b64 = parsePublishItem({ channel: "c", enc: "base64", data: "AQID", type: "image/png" }) as { data: Uint8Array; type: string };
    expect(Buffer.from(b64.data)).toEqual(Buffer.from([1, 2, 3]));
    expect(b64.type).toBe("image/png");
    expect(parsePublishItem({ channel: "c", data: 1, type: "image/png" })).toMatchObject({ code: "bad_request" });
    expect(parsePublishItem({ channel: "c", enc: "base64", data: "A" })).toMatchObject({ code: "bad_request" });
    expect(parsePublishItem({ channel: "c", enc: "hex", data: "00" })).toMatchObject({ code: "bad_request" });
    expect(parsePublishItem({ channel: "c", data: { a: 1 } })).not.toHaveProperty("type");
  });

  it("binary — a binary codec's pub may carry bytes as data (single and batch items); bytes anywhere else are still refused", () => {
    const bin = Uint8Array.from([1, 2]);
    expect(validateClientFrame({ op: "pub", channel: "c", data: bin }, true)).toMatchObject({ ok: true, frame: { type: "application/octet-stream" } });
    const batch = validateClientFrame({ op: "pub", batch: [{ channel: "c", data: bin }] }, true);
    expect(batch).toMatchObject({ ok: true, frame: { batch: [{ type: "application/octet-stream" }] } });
    expect(validateClientFrame({ op: "pub", channel: "c", data: { x: bin } }, true)).toMatchObject({ ok: false });
    expect(validateClientFrame({ op: "sub", channel: "c", info: bin }, true)).toMatchObject({ ok: false });
    // JSON frames: base64 with enc.
    expect(parseClientFrame('{"op":"pub","channel":"c","enc":"base64","data":"AQI="}')).toMatchObject({
      ok: true,
      frame: { type: "application/octet-stream" },
    });
  });
});
