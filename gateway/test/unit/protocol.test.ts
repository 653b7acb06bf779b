import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkChannel, checkPattern, matches, SubjectMapper } from "../../src/protocol/channel.js";
import { parseClientFrame } from "../../src/protocol/frames.js";
import { MAX_TTL_SECONDS, parseTtl } from "../../src/protocol/batch.js";
import { buildFrames, isJsonPayload, msgFrame } from "../../src/protocol/serialize.js";

describe("protocol — channels", () => {
  it.each(["orders", "orders.eu", "a-b_c.d:e", "x.y.z"])("accepts channel %s", (c) => expect(checkChannel(c).ok).toBe(true));
  it.each(["", "orders..eu", ".orders", "orders.", "or ders", "$JS.API", "orders.*", "orders.>", "a\tb", 42, "a.b*"])("rejects channel %j", (c) =>
    expect(checkChannel(c).ok).toBe(false),
  );
  it.each(["orders.*", "orders.>", "*.eu", ">", "*"])("accepts pattern %s", (p) => expect(checkPattern(p).ok).toBe(true));
  it.each(["orders.>.eu", "orders.**", "$SYS.>"])("rejects pattern %s", (p) => expect(checkPattern(p).ok).toBe(false));
  it("channels — a lone surrogate is refused (it would be sent as U+FFFD: lone.\\uD800 and lone.\\uFFFD one subject); pairs are fine", () => {
    for (const bad of ["lone.\uD800", "lone.\uDC00x", "x.\uD83D"]) {
      expect(checkChannel(bad)).toEqual({ ok: false, reason: expect.stringContaining("well-formed") });
      expect(checkPattern(`${bad}.>`).ok).toBe(false);
    }
    expect(checkChannel("lone.\uFFFD").ok).toBe(true);
    expect(checkChannel("emoji.\uD83D\uDE00").ok).toBe(true);
  });
  it("channels — C0/C1 controls, bidi formatting and invisible characters are refused, naming the code point; joiners and emoji sequences stay", () => {
    const refused = [
      "\u0085",
      "\u0080",
      "\u009f",
      "\u202e",
      "\u202a",
      "\u2066",
      "\u2069",
      "\u200e",
      "\u200f",
      "\u061c",
      "\u200b",
      "\u2060",
      "\u00ad",
      "\u0000",
      "\u007f",
    ];
    for (const ch of refused) {
      const code = `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
      expect(checkChannel(`room.${ch}x`)).toEqual({ ok: false, reason: `channel has the invisible or control character ${code}` });
      expect(checkPattern(`room.a${ch}.>`).ok).toBe(false);
    }
    for (const ok of [
      "ro\u200dom",
      "\u0645\u06cc\u200c\u062e\u0648\u0627\u0645",
      "\u{1F468}\u200d\u{1F469}",
      "flag.\u{1F3F4}\u{E0067}\u{E0062}\u{E007F}",
      "\u2764\ufe0f",
      "caf\u00e9",
    ])
      expect(checkChannel(`room.${ok}`)).toEqual({ ok: true });
  });
  it("ttl — whole seconds from 1s to 36500d; what NATS cannot hold in nanoseconds is refused, not sent", () => {
    expect([parseTtl("30s"), parseTtl("5m"), parseTtl(" 2h "), parseTtl("1d"), parseTtl(90), parseTtl("36500d")]).toEqual([
      "30s",
      "300s",
      "7200s",
      "86400s",
      "90s",
      `${MAX_TTL_SECONDS}s`,
    ]);
    for (const bad of ["0s", "soon", "1.5s", "36501d", "104249991374d", "9223372037s", 0, 1.5, 9223372037, 9007199254740991, Number.MAX_VALUE, null, true])
      expect(parseTtl(bad)).toBeUndefined();
  });
  it("frames — id -0 is taken as 0, so that the echoed id matches (regression: found by the frame fuzzer)", () => {
    const r = parseClientFrame('{"op":"unsub","id":-0,"channel":">"}');
    expect(r.ok && Object.is(r.frame.id, 0)).toBe(true);
  });
  it("matches with NATS semantics", () => {
    expect(matches("orders.*", "orders.eu")).toBe(true);
    expect(matches("orders.*", "orders.eu.x")).toBe(false);
    expect(matches("orders.>", "orders.eu.x")).toBe(true);
    expect(matches("orders.>", "orders")).toBe(false);
    expect(matches("*.eu", "orders.eu")).toBe(true);
    expect(matches("orders.eu", "orders.eu")).toBe(true);
    expect(matches("orders.eu", "orders.us")).toBe(false);
  });
  it("maps channels to subjects under the prefix", () => {
    const m = new SubjectMapper("ev");
    expect(m.toSubject("orders.eu")).toBe("ev.orders.eu");
    expect(m.toChannel("ev.orders.eu")).toBe("orders.eu");
    expect(m.streamSubject).toBe("ev.>");
  });
});

describe("protocol — client frames", () => {
  const bad = (text: string) => {
    const r = parseClientFrame(text);
    if (r.ok) throw new Error(`accepted ${text}`);
    return r;
  };
  it("parses every op", () => {
    expect(parseClientFrame('{"op":"sub","id":1,"channel":"orders.*"}')).toEqual({ ok: true, frame: { op: "sub", id: 1, channel: "orders.*" } });
    expect(parseClientFrame('{"op":"pub","id":"a","channel":"o.e","data":{"x":1},"msgId":"m-1"}')).toMatchObject({
      ok: true,
      frame: { op: "pub", msgId: "m-1", data: { x: 1 } },
    });
    expect(parseClientFrame('{"op":"unsub","channel":"o"}')).toMatchObject({ ok: true });
    expect(parseClientFrame('{"op":"ping","id":4}')).toEqual({ ok: true, frame: { op: "ping", id: 4 } });
    expect(parseClientFrame('{"op":"sub","channel":"o","from":{"seq":5}}')).toMatchObject({ ok: true, frame: { from: { seq: 5 } } });
    expect(parseClientFrame('{"op":"sub","channel":"o","from":"all"}')).toMatchObject({ ok: true, frame: { from: "all" } });
    expect(parseClientFrame('{"op":"sub","channel":"o.*","from":"last_per_subject"}')).toMatchObject({ ok: true, frame: { from: "last_per_subject" } });
  });
  it("answers bad input with a code and keeps the id", () => {
    expect(bad("{nope").code).toBe("bad_json");
    expect(bad("[1,2]").code).toBe("bad_json");
    expect(bad('{"id":7}')).toMatchObject({ code: "unknown_op", id: 7 });
    expect(bad('{"op":"fly","id":8}')).toMatchObject({ code: "unknown_op", id: 8 });
    expect(bad('{"op":"sub","id":9}')).toMatchObject({ code: "bad_channel", id: 9 });
    expect(bad('{"op":"sub","channel":"a b"}').code).toBe("bad_channel");
    expect(bad('{"op":"pub","channel":"a.*","data":1}').code).toBe("bad_channel");
    expect(bad('{"op":"pub","channel":"a"}').code).toBe("bad_request");
    expect(bad('{"op":"pub","channel":"a","data":1,"msgId":""}').code).toBe("bad_request");
    expect(bad('{"op":"sub","channel":"a","from":{"seq":0}}').code).toBe("bad_request");
    expect(bad('{"op":"sub","channel":"a","from":{"time":"yesterday"}}').code).toBe("bad_request");
    expect(bad('{"op":"ping","id":{"x":1}}').code).toBe("bad_request");
  });
});

describe("protocol — msg frames", () => {
  it("splices a JSON payload without re-encoding it", () => {
    const f = msgFrame({ channel: "o.eu", pattern: "o.*", seq: 3, ts: 1.5 }, Buffer.from('{"a":[1,2]}'));
    expect(JSON.parse(f.toString())).toEqual({ op: "msg", channel: "o.eu", sub: "o.*", seq: 3, ts: 1.5, data: { a: [1, 2] } });
  });
  it("delivers a non-JSON payload (put into the stream by others) as text", () => {
    const f = msgFrame({ channel: "o", pattern: "o", seq: 1, ts: 1 }, Buffer.from("hello world"));
    expect(JSON.parse(f.toString())).toMatchObject({ enc: "text", data: "hello world" });
    expect(isJsonPayload(Buffer.from("12.5"))).toBe(true);
    expect(isJsonPayload(Buffer.from("nope"))).toBe(false);
    // Shaped like JSON but not JSON, or not UTF-8 (written by another NATS client): never spliced.
    expect(isJsonPayload(Buffer.from("{not json}"))).toBe(false);
    expect(isJsonPayload(Buffer.from([0x22, 0xff, 0x22]))).toBe(false);
    for (const p of [Buffer.from("{not json}"), Buffer.from("[1,2"), Buffer.from([0x7b, 0xc3, 0x28, 0x7d]), Buffer.from("plain")]) {
      const f = JSON.parse(msgFrame({ channel: "c", pattern: "c", seq: 1, ts: 1 }, p).toString()) as { enc: string; data: string };
      const back = f.enc === "base64" ? Buffer.from(f.data, "base64") : Buffer.from(f.data, "utf8");
      expect(back.equals(p)).toBe(true);
    }
  });
  it("msg frames — a replay page's frames (one buffer, digits in place) are byte-identical to msgFrame's, across channels and sizes", () => {
    const cases: [string, string, number, number, Buffer][] = [
      ["o.eu", "o.*", 3, 1763759686123.456, Buffer.from('{"a":[1,2]}')],
      ["o.eu", "o.*", 4, 1763759686124, Buffer.from('"é ü 漢字"')],
      ["o.us", "o.*", 5, 1.5, Buffer.from(`{"big":"${"x".repeat(40_000)}"}`)], // grows the scratch buffer
      ["p", "p", 6, 2, Buffer.from("[]")],
      ["p", "p", 7, 3, Buffer.from("not json")], // falls back to the text frame
    ];
    for (const pattern of ["o.*", "p"]) {
      const page = cases.filter((c) => c[1] === pattern).map(([channel, , seq, ts, payload]) => ({ channel, seq, ts, payload }));
      const frames = buildFrames(pattern, page);
      page.forEach((m, i) => expect(frames[i]!.equals(msgFrame({ ...m, pattern }, m.payload))).toBe(true));
    }
  });
  it("msg frames — digits written in place match JavaScript's own number text for any seq and µs timestamp", () => {
    const payload = Buffer.from('{"k":1}');
    // Found by this property (seed -67609139): past 2^42 ms one double stands for two µs values, and JavaScript
    // writes the shorter text; the digits written in place gave .279.
    for (const ts of [8860848215536.28, 2 ** 42 - 0.001, 2 ** 42, 4_102_444_800_000.001]) {
      expect(buildFrames("c", [{ channel: "c", seq: 1, ts, payload }])[0]!.toString()).toBe(
        msgFrame({ channel: "c", pattern: "c", seq: 1, ts }, payload).toString(),
      );
    }
    fc.assert(
      fc.property(fc.nat({ max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 0, max: 4_102_444_800_000_000 }), fc.double({ noNaN: true }), (seq, us, odd) => {
        for (const ts of [us / 1_000, odd]) {
          const a = buildFrames("c", [{ channel: "c", seq, ts, payload }])[0]!;
          expect(a.toString()).toBe(msgFrame({ channel: "c", pattern: "c", seq, ts }, payload).toString());
        }
      }),
      { numRuns: 5_000 },
    );
  });
});
