// A delta subscription's frames through the MessagePack wire, as the server's codec writes them: the wire
// keeps a full message's payload bytes (its base) and leaves a delta's data as bytes for DeltaBases.
import { decode, encode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { DeltaBases } from "../src/deltas.js";
import { msgpackWire, RAW, type MsgRaw } from "../src/wire.js";
import { ChannelDeltas, DeltaSubscription } from "../../src/fanout/deltas.js";
import { MSGPACK_CODEC } from "../../src/protocol/codecs.js";

const wire = msgpackWire({ encode, decode });
const arrayBuffer = (b: Uint8Array): ArrayBuffer => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

describe("wire — deltas in fanout.v1.msgpack", () => {
  it("wire — full then delta frames of the server's codec give each document through DeltaBases", () => {
    const docs = [0, 1, 2, 3].map((n) => JSON.stringify({ n, text: "a state document that mostly stays the same ".repeat(8) }));
    const server = new ChannelDeltas();
    const sub = new DeltaSubscription();
    const bases = new DeltaBases();
    const kinds: string[] = [];
    docs.forEach((d, i) => {
      const payload = Buffer.from(d);
      const m = server.next("c", i + 1, payload);
      const meta = { channel: "c", pattern: "c", seq: i + 1, ts: 1 };
      const frame = sub.next(m) === "delta" ? MSGPACK_CODEC.delta(meta, m.baseSeq, m.delta()!) : MSGPACK_CODEC.msg(meta, payload);
      const frames = wire.decode(arrayBuffer(frame))!;
      expect(frames).toHaveLength(1);
      const f = frames[0]!;
      kinds.push(f.delta === true ? "d" : "F");
      const raw = (f as Record<symbol, MsgRaw | undefined>)[RAW];
      expect(raw).toBeInstanceOf(Uint8Array); // every msg frame keeps it: the client reads it before knowing the kind
      const got = bases.receive(f, raw!);
      expect(got).toEqual({ ok: true, data: JSON.parse(d) });
    });
    expect(kinds.join("")).toBe("Fddd");
  });
});
