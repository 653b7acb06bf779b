// The lean engine's frame reader: frame boundaries whatever the TCP chunking, all three length encodings,
// fragmented messages, control frames in between, and the frames it must refuse.
import { describe, expect, it } from "vitest";
import { clientFrame, FrameError, FrameReader, Opcode, serverFrame, type FrameSink } from "../../src/lean/frame-reader.js";

type Got = { kind: "message" | "control"; opcode: number; text: string };

function collector(): { sink: FrameSink; got: Got[] } {
  const got: Got[] = [];
  return {
    got,
    sink: {
      message: (opcode, buf, s, e) => got.push({ kind: "message", opcode, text: buf.toString("latin1", s, e) }),
      control: (opcode, buf, s, e) => got.push({ kind: "control", opcode, text: buf.toString("latin1", s, e) }),
    },
  };
}

/** Feeds `bytes` in chunks of the given sizes (cycled), through a reused buffer like the connection's. */
function feedChunked(reader: FrameReader, bytes: Buffer, sizes: number[]): void {
  const shared = Buffer.alloc(bytes.length + 16, 0xee);
  let at = 0;
  for (let i = 0; at < bytes.length; i++) {
    const n = Math.min(sizes[i % sizes.length]!, bytes.length - at);
    shared.fill(0xee);
    bytes.copy(shared, 0, at, at + n);
    reader.feed(shared, 0, n);
    at += n;
  }
}

const text = (s: string): Buffer => serverFrame(Opcode.Text, Buffer.from(s, "latin1"));

describe("lean frame reader", () => {
  it("frame reader — several frames in one chunk are read in order, without copying", () => {
    const { sink, got } = collector();
    const r = new FrameReader(sink);
    r.feed(Buffer.concat([text('{"a":1}'), text('{"b":2}'), text("")]));
    expect(got.map((g) => g.text)).toEqual(['{"a":1}', '{"b":2}', ""]);
    expect(r.pending).toBe(0);
  });

  it("frame reader — a frame split across TCP chunks at every byte position is read once, whole", () => {
    const frames = Buffer.concat([text("first message"), text("x".repeat(300)), text("third")]);
    for (let cut = 1; cut < frames.length; cut++) {
      const { sink, got } = collector();
      const r = new FrameReader(sink);
      feedChunked(r, frames, [cut, frames.length]);
      expect(
        got.map((g) => g.text),
        `cut at ${cut}`,
      ).toEqual(["first message", "x".repeat(300), "third"]);
      expect(r.pending).toBe(0);
    }
  });

  it("frame reader — 7-bit, 16-bit and 64-bit lengths, one byte at a time and in odd chunks", () => {
    const sizes = [0, 125, 126, 127, 65_535, 65_536, 70_000];
    const payloads = sizes.map((n, i) => String.fromCharCode(97 + i).repeat(n));
    const bytes = Buffer.concat(payloads.map(text));
    // The headers: 2 bytes up to 125, 4 up to 65,535, 10 beyond.
    expect(text("a".repeat(125))[1]).toBe(125);
    expect(text("a".repeat(126))[1]).toBe(126);
    expect(text("a".repeat(65_536))[1]).toBe(127);
    for (const chunks of [[1], [3, 7, 1000], [4096], [65_536 + 9]]) {
      const { sink, got } = collector();
      const r = new FrameReader(sink);
      feedChunked(r, bytes, chunks);
      expect(
        got.map((g) => g.text.length),
        `chunks ${chunks}`,
      ).toEqual(sizes);
      expect(got.map((g) => g.text)).toEqual(payloads);
    }
  });

  it("frame reader — a fragmented message is joined, with a ping between its fragments delivered at once", () => {
    const { sink, got } = collector();
    const r = new FrameReader(sink);
    const parts = Buffer.concat([
      serverFrame(Opcode.Text, Buffer.from('{"part":'), false),
      serverFrame(Opcode.Ping, Buffer.from("hb")),
      serverFrame(Opcode.Continuation, Buffer.from("1,"), false),
      serverFrame(Opcode.Continuation, Buffer.from('"end":true}'), true),
    ]);
    feedChunked(r, parts, [5]);
    expect(got).toEqual([
      { kind: "control", opcode: Opcode.Ping, text: "hb" },
      { kind: "message", opcode: Opcode.Text, text: '{"part":1,"end":true}' },
    ]);
  });

  it("frame reader — close frames reach the sink with their code", () => {
    const { sink, got } = collector();
    const p = Buffer.alloc(2);
    p.writeUInt16BE(1001);
    new FrameReader(sink).feed(serverFrame(Opcode.Close, p));
    expect(got[0]!.kind).toBe("control");
    expect(Buffer.from(got[0]!.text, "latin1").readUInt16BE(0)).toBe(1001);
  });

  it("frame reader — refuses masked server frames, reserved bits, oversized and stray continuation frames", () => {
    const masked = clientFrame(Opcode.Text, Buffer.from("hi"), Buffer.from([1, 2, 3, 4]));
    const rsv = text("hi");
    rsv[0] = rsv[0]! | 0x40;
    const stray = serverFrame(Opcode.Continuation, Buffer.from("x"));
    for (const [bad, code] of [
      [masked, 1002],
      [rsv, 1002],
      [stray, 1002],
      [text("y".repeat(200)), 1009],
    ] as const) {
      const r = new FrameReader(collector().sink, 100);
      expect(() => r.feed(bad)).toThrow(FrameError);
      try {
        r.feed(bad);
      } catch (e) {
        expect((e as FrameError).closeCode).toBe(code);
      }
    }
  });

  it("frame reader — client frames are masked and unmask to their payload", () => {
    const payload = Buffer.from("z".repeat(70_000));
    const mask = Buffer.from([0x11, 0x22, 0x33, 0x44]);
    const f = clientFrame(Opcode.Text, payload, mask);
    expect(f[1]! & 0x80).toBe(0x80);
    expect(f[1]! & 0x7f).toBe(127);
    const body = f.subarray(14);
    const un = Buffer.from(body.map((b, i) => b ^ mask[i & 3]!));
    expect(un.equals(payload)).toBe(true);
  });
});
