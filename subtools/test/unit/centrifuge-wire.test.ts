// The load tools' Centrifuge wire: frames written by the gateway's own door encoders are read back, in both
// formats, as publications (their bytes holding the payload), pings and other replies.
import { describe, expect, it } from "vitest";
import { centrifugeCommand, pongOf, readCentrifugeFrame, type CentrifugeFormat, type CentrifugeReply } from "../../src/clients/centrifuge-wire.js";
import { encodeReply, publicationPush } from "../../../gateway/src/protocol/centrifuge/json.js";
import { encodeProtoReply, protoPublicationPush, decodeProtoCommands } from "../../../gateway/src/protocol/centrifuge/protobuf.js";
import { ProtoError } from "../../../gateway/src/protocol/centrifuge/proto-wire.js";

const meta = { channel: "bench.fanout", pattern: "bench.fanout", seq: 300, ts: 1 };
const payload = Buffer.from('{"t":123,"s":7,"x":"xx"}');

function read(format: CentrifugeFormat, frame: Buffer): { pubs: string[]; pings: number; others: CentrifugeReply[] } {
  const out = { pubs: [] as string[], pings: 0, others: [] as CentrifugeReply[] };
  // Read at an offset inside a bigger buffer, as the lean engine hands frames over.
  const buf = Buffer.concat([Buffer.from("junk"), frame, Buffer.from("tail")]);
  readCentrifugeFrame(format, buf, 4, 4 + frame.length, {
    pub: (s, e) => out.pubs.push(buf.toString("latin1", s, e)),
    ping: () => out.pings++,
    other: (r) => out.others.push(r),
  });
  return out;
}

describe("centrifuge wire", () => {
  it("centrifuge wire — a JSON frame's lines: publications, a ping and a reply", () => {
    const frame = Buffer.concat([
      publicationPush(meta, payload),
      Buffer.from("\n{}\n"),
      Buffer.from(encodeReply({ id: 2, subscribe: { recoverable: false } })),
      Buffer.from("\n"),
      publicationPush({ ...meta, seq: 301 }, payload),
    ]);
    const r = read("json", frame);
    expect(r.pubs).toHaveLength(2);
    expect(r.pubs[0]).toContain('"s":7');
    expect(r.pings).toBe(1);
    expect(r.others).toEqual([{ id: 2, subscribe: { recoverable: false } }]);
  });

  it("centrifuge wire — a Protobuf frame's messages: publications, a ping (zero length) and replies decoded whole", () => {
    const frame = Buffer.concat([
      protoPublicationPush(meta, payload),
      Buffer.from([0]),
      encodeProtoReply({ id: 1, connect: { client: "c1", version: "v" } }),
      encodeProtoReply({ push: { channel: "bench:fanout", disconnect: { code: 3501, reason: "bad request", reconnect: false } } }),
      protoPublicationPush({ ...meta, seq: 2 ** 40 }, payload),
    ]);
    const r = read("protobuf", frame);
    expect(r.pubs).toHaveLength(2);
    for (const p of r.pubs) expect(p).toContain('{"t":123,"s":7');
    expect(r.pings).toBe(1);
    expect(r.others[0]).toMatchObject({ id: 1, connect: { client: "c1" } });
    expect(r.others[1]?.push?.disconnect).toMatchObject({ code: 3501 });
  });

  it("centrifuge wire — a Protobuf length longer than the frame is refused, not read past", () => {
    const whole = protoPublicationPush(meta, payload);
    expect(() => read("protobuf", whole.subarray(0, whole.length - 1))).toThrow(ProtoError);
  });

  it("centrifuge wire — commands in both formats are what the door decodes, and pongs are empty commands", () => {
    expect(JSON.parse(centrifugeCommand("json", { id: 1, connect: { name: "n" } }) as string)).toEqual({ id: 1, connect: { name: "n" } });
    const bin = centrifugeCommand("protobuf", { id: 2, subscribe: { channel: "bench:fanout" } }) as Buffer;
    const d = decodeProtoCommands(Buffer.concat([bin, pongOf("protobuf") as Buffer]));
    expect(d.ok && d.value).toEqual([{ id: 2, subscribe: { channel: "bench:fanout" } }, {}]);
    expect(pongOf("json")).toBe("{}");
  });
});
