// The codec seam (protocol/codec.ts, codecs.ts, json-codec.ts, server-frames.ts): decoding apart from
// validation, every server frame as a value encoded by the connection's codec, and `msg` frames built once
// per message and codec. fanout.v1 (JSON) must stay byte for byte what it was: the expected strings below
// are the frames the hand-written builders wrote before the seam.
import { describe, expect, it } from "vitest";
import { LiveMsg, type Codec } from "../../src/protocol/codec.js";
import { codecTopic } from "../../src/fanout/topics.js";
import { codecOf, CODECS, JSON_CODEC, MSGPACK_CODEC } from "../../src/protocol/codecs.js";
import { parseClientFrame, validateClientFrame } from "../../src/protocol/frames.js";
import type { ServerFrame } from "../../src/protocol/server-frames.js";
import { FramePage } from "../../src/fanout/replay-cache.js";
import { readUpgradeOffer } from "../../src/auth/upgrade-token.js";

const bytes = (s: string): ArrayBuffer => {
  const b = Buffer.from(s);
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
};

/** A codec that counts what it builds (JSON underneath), at a slot of its own. */
function countingCodec(slot: number): Codec & { built: number } {
  const c = {
    ...JSON_CODEC,
    name: `count${slot}`,
    slot,
    built: 0,
    msg: (...a: Parameters<Codec["msg"]>) => {
      c.built++;
      return JSON_CODEC.msg(...a);
    },
    msgs: (...a: Parameters<Codec["msgs"]>) => {
      c.built += a[1].length;
      return JSON_CODEC.msgs(...a);
    },
  };
  return c;
}

describe("codec seam", () => {
  it("json codec — every server frame is written as fanout.v1 always wrote it", () => {
    const cases: [ServerFrame, string][] = [
      [{ op: "ok", id: 1 }, '{"op":"ok","id":1}'],
      [{ op: "ok", id: "a", fields: { seq: 5, duplicate: false, skipped: undefined } }, '{"op":"ok","id":"a","seq":5,"duplicate":false}'],
      [{ op: "ok", fields: { exp: 9 } }, '{"op":"ok","exp":9}'],
      [
        { op: "err", id: 2, code: "bad_channel" as never, message: 'no "x"', temporary: false },
        '{"op":"err","id":2,"code":"bad_channel","message":"no \\"x\\"","temporary":false}',
      ],
      [{ op: "pong", id: 3, time: 1700000000000.5 }, '{"op":"pong","id":3,"time":1700000000000.500}'],
      [{ op: "unsub", channel: "a.b", reason: "gone" }, '{"op":"unsub","channel":"a.b","reason":"gone"}'],
      [{ op: "live", sub: "a.*", seq: 12 }, '{"op":"live","sub":"a.*","seq":12}'],
      [{ op: "sub", channel: "in.u", auto: true, seq: 4, epoch: "E1" }, '{"op":"sub","channel":"in.u","auto":true,"seq":4,"epoch":"E1"}'],
      [{ op: "sub", channel: "in.u", auto: true, seq: 0 }, '{"op":"sub","channel":"in.u","auto":true,"seq":0}'],
      [{ op: "join", channel: "r", client: "c1", user: null, info: { n: 1 } }, '{"op":"join","channel":"r","client":"c1","user":null,"info":{"n":1}}'],
      [{ op: "leave", channel: "r", client: "c1", user: "bob" }, '{"op":"leave","channel":"r","client":"c1","user":"bob"}'],
      [
        { op: "presence", id: 7, channel: "r", members: [{ client: "c", user: "u", joinedAt: 5 }], truncated: false },
        '{"op":"presence","id":7,"channel":"r","members":[{"client":"c","user":"u","joinedAt":5}],"truncated":false}',
      ],
    ];
    for (const [frame, text] of cases) expect(JSON_CODEC.encode(frame)).toBe(text);
    expect(Buffer.from(JSON_CODEC.msg({ channel: "a.b", pattern: "a.*", seq: 3, ts: 1.5 }, Buffer.from('{"x":1}'))).toString()).toBe(
      '{"op":"msg","channel":"a.b","sub":"a.*","seq":3,"ts":1.5,"data":{"x":1}}',
    );
    const durable = JSON_CODEC.msg({ channel: "a", pattern: "a", seq: 3, ts: 1, durable: { name: "d", redelivered: true, deliveries: 2 } }, Buffer.from("1"));
    expect(Buffer.from(durable).toString()).toBe(
      '{"op":"msg","channel":"a","sub":"a","seq":3,"ts":1,"durable":"d","redelivered":true,"deliveries":2,"data":1}',
    );
  });

  it("json codec — decoding is apart from validation; a binary frame, bad JSON and a non-object are refused with bad_json", () => {
    expect(JSON_CODEC.decode(bytes('{"op":"ping"}'), true)).toMatchObject({
      ok: false,
      code: "bad_json",
      message: "frames must be UTF-8 JSON text, not binary",
    });
    expect(JSON_CODEC.decode(bytes("{nope"), false)).toMatchObject({ ok: false, code: "bad_json" });
    const d = JSON_CODEC.decode(bytes('{"op":"sub","id":1,"channel":"a.*"}'), false);
    expect(d).toEqual({ ok: true, value: { op: "sub", id: 1, channel: "a.*" }, mayNotFitJson: false });
    if (!d.ok) throw new Error("decoded");
    expect(validateClientFrame(d.value, d.mayNotFitJson)).toEqual(parseClientFrame('{"op":"sub","id":1,"channel":"a.*"}'));
    expect(validateClientFrame([1], false)).toMatchObject({ ok: false, code: "bad_json" });
    expect(validateClientFrame(new Uint8Array(2), false)).toMatchObject({ ok: false, code: "bad_json" });
  });

  it("validation — a number that is not finite is refused when the decoder says it may hold one", () => {
    const huge = JSON_CODEC.decode(bytes('{"op":"pub","id":1,"channel":"a","data":1e999}'), false);
    expect(huge).toMatchObject({ ok: true, mayNotFitJson: true });
    expect(validateClientFrame({ op: "pub", id: 1, channel: "a", data: Infinity }, true)).toMatchObject({ ok: false, code: "bad_request", id: 1 });
    expect(validateClientFrame({ op: "pub", id: 1, channel: "a", data: 1 }, true)).toMatchObject({ ok: true });
  });

  it("registry — each codec sits at its slot; a subprotocol selects its codec, none selects JSON; topics of JSON are unchanged", () => {
    CODECS.forEach((c, i) => expect(c.slot).toBe(i));
    expect(codecOf("fanout.v1")).toBe(JSON_CODEC);
    expect(codecOf("")).toBe(JSON_CODEC);
    expect(codecOf("something-else")).toBe(JSON_CODEC);
    expect(codecTopic("p:a.b", JSON_CODEC)).toBe("p:a.b");
    expect(codecTopic("p:a.b", countingCodec(1))).not.toBe("p:a.b");
    expect(codecOf("fanout.v1.msgpack")).toBe(MSGPACK_CODEC);
    expect(codecTopic("p:a.b", MSGPACK_CODEC)).toBe("p:a.b\u0000msgpack");
    const offer = (protocols: string) => readUpgradeOffer({ authorization: "", protocols, queryToken: undefined });
    expect(offer("x, fanout.v1")).toEqual({ protocol: "fanout.v1" });
    expect(offer("fanout.v1.msgpack, bearer.tok")).toEqual({ protocol: "fanout.v1.msgpack", token: "tok" });
    expect(offer("x, fanout.v1.msgpack")).toEqual({ protocol: "fanout.v1.msgpack" });
    // Only a subprotocol the gateway speaks is ever selected (RFC 6455): unknown names alone select none.
    expect(offer("fanout.v2")).toEqual({ protocol: "" });
    expect(offer("x-a, x-b")).toEqual({ protocol: "" });
    expect(offer("x-a, bearer.tok")).toHaveProperty("error");
    // The client's order decides between two of ours.
    expect(offer("fanout.v1, fanout.v1.msgpack")).toEqual({ protocol: "fanout.v1" });
  });

  it("live message — its frame is built once per codec, on first use, and never for a codec nobody asks for", () => {
    const a = countingCodec(0);
    const b = countingCodec(1);
    const m = new LiveMsg({ channel: "c", pattern: "c", seq: 1, ts: 1 }, Buffer.from("{}"));
    expect(a.built + b.built).toBe(0);
    const f = m.frame(a);
    expect(m.frame(a)).toBe(f);
    expect(a.built).toBe(1);
    expect(b.built).toBe(0);
    m.frame(b);
    m.frame(b);
    expect(b.built).toBe(1);
  });

  it("replay page — JSON frames are built as it arrives; another codec's once for the whole page when first read; the page grows by them", () => {
    const b = countingCodec(1);
    const wire = Buffer.from('xx{"s":1}xx{"s":2}xxTEXTxx');
    const payloads = [wire.subarray(2, 9), wire.subarray(11, 18), wire.subarray(20, 24)];
    const messages = payloads.map((payload, i) => ({ channel: "c", seq: i + 1, ts: i + 1, payload }));
    let grown = 0;
    const page = new FramePage("c", 1, 3, messages, (_p, n) => (grown += n));
    expect(Buffer.from(page.items[1]?.frame.frame(JSON_CODEC) ?? []).toString()).toBe('{"op":"msg","channel":"c","sub":"c","seq":2,"ts":2,"data":{"s":2}}');
    expect(grown).toBe(0);
    const before = page.bytes;
    page.items[0]?.frame.frame(b);
    page.items[2]?.frame.frame(b);
    expect(b.built).toBe(3);
    expect(grown).toBeGreaterThan(0);
    expect(page.bytes).toBe(before + grown);
    // The page keeps no view of the buffer its messages were read into.
    wire.fill(0x20);
    expect(Buffer.from(page.items[1]?.frame.frame(b) ?? []).toString()).toContain('"data":{"s":2}');
    expect(Buffer.from(page.items[2]?.frame.frame(b) ?? []).toString()).toContain('"data":"TEXT"');
  });
});
