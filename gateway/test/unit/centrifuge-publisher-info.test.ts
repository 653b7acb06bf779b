import { describe, expect, it } from "vitest";
import { parseJsHeaders } from "../../src/broker/jetstream/headers.js";
import { CENTRIFUGE_JSON_CODEC, CENTRIFUGE_JSON_DELTA_CODEC, encodeReply, publicationPush } from "../../src/protocol/centrifuge/json.js";
import { CENTRIFUGE_PROTOBUF_CODEC, encodeProtoReply, protoPublicationPush } from "../../src/protocol/centrifuge/protobuf.js";
import { decodeDelimited } from "../../src/protocol/centrifuge/proto-wire.js";
import { publicationReply } from "../../src/protocol/centrifuge/shapes.js";
import { PUBLISHER_HEADER, publisherHeader, publisherInfo, readPublisher, storedPublisher } from "../../src/protocol/publisher-info.js";

const bytes = (s: string) => Buffer.from(s, "utf8");
const ANN = { user: "ann", client: "c-1", conn_info: { name: "Änn ✓" }, chan_info: { role: "host" } };

describe("publisher info — the Fanout-Publisher header", () => {
  it("header — one line of ASCII JSON, read back as written; infos over 1,024 bytes and ids over 256 are not kept", () => {
    const h = publisherHeader(ANN);
    expect(/^[\x20-\x7e]+$/.test(h)).toBe(true);
    expect(storedPublisher(h)).toEqual(ANN);
    expect(publisherInfo(null, "c-2")).toEqual({ user: "", client: "c-2" });
    const big = { s: "x".repeat(1_020) };
    expect(publisherInfo("u", "c", big, { ok: 1 })).toEqual({ user: "u", client: "c", chan_info: { ok: 1 } });
    expect(publisherInfo("u".repeat(257), "c")).toBeUndefined();
    expect(publisherInfo("u", "")).toBeUndefined();
  });

  it("header — what a NATS client may write instead is ignored: not JSON, not an object, ids not strings", () => {
    for (const v of [undefined, "", "x", "[1]", "null", '{"user":1,"client":"c"}', '{"user":"u"}', `{"user":"u","client":"${"c".repeat(300)}"}`])
      expect(storedPublisher(v)).toBeUndefined();
  });

  it("js headers — a republished message with its publisher (the general loop), beside a content type", () => {
    const msg = bytes(
      `NATS/1.0\r\nNats-Stream: FANOUT_CHANNELS\r\nNats-Subject: cf.a\r\nNats-Sequence: 6\r\nNats-Time-Stamp: 2026-11-22T18:02:18Z\r\nNats-Last-Sequence: 4\r\n${PUBLISHER_HEADER}: ${publisherHeader(ANN)}\r\nFanout-Content-Type: image/png\r\n\r\n`,
    );
    expect(parseJsHeaders(msg, msg.length)).toMatchObject({ subject: "cf.a", seq: 6, last: 4, pending: 0, type: "image/png", publisher: publisherHeader(ANN) });
    const none = bytes(
      "NATS/1.0\r\nNats-Stream: S\r\nNats-Subject: cf.a\r\nNats-Sequence: 6\r\nNats-Time-Stamp: 2026-11-22T18:02:18Z\r\nNats-Num-Pending: 3\r\nX: 1\r\n\r\n",
    );
    expect(parseJsHeaders(none, none.length)).not.toHaveProperty("publisher");
    expect(parseJsHeaders(none, none.length)).toMatchObject({ pending: 3 });
  });
});

describe("publisher info — the Centrifuge door's publications", () => {
  const meta = { channel: "cf.room", pattern: "cf.room", seq: 42, ts: 1, publisher: publisherHeader(ANN) };
  const payload = bytes('{"n":1}');

  it("JSON — the publication push carries info beside the stored data, as the generic encoder writes it; none without a publisher", () => {
    const line = publicationPush(meta, payload);
    expect(line.equals(Buffer.from(encodeReply(publicationReply(meta, payload))))).toBe(true);
    expect(JSON.parse(line.toString("utf8"))).toEqual({ push: { channel: "cf:room", pub: { data: { n: 1 }, info: ANN, offset: 42 } } });
    expect(JSON.parse(publicationPush({ ...meta, publisher: undefined }, payload).toString("utf8"))).toEqual({
      push: { channel: "cf:room", pub: { data: { n: 1 }, offset: 42 } },
    });
    // A header that is not the gateway's (another NATS client's): no info, the publication as before.
    expect(JSON.parse(publicationPush({ ...meta, publisher: '{"user":1}' }, payload).toString("utf8"))).toEqual({
      push: { channel: "cf:room", pub: { data: { n: 1 }, offset: 42 } },
    });
    expect(readPublisher(publisherHeader({ user: "bob", client: "c-9" }))).toEqual({ user: "bob", client: "c-9" });
    expect(readPublisher(meta.publisher)).toEqual(ANN);
    // Pages (recovery) and delta subscriptions carry it too.
    const [page] = CENTRIFUGE_JSON_CODEC.msgs("cf.room", [{ channel: "cf.room", seq: 42, ts: 1, payload, publisher: publisherHeader(ANN) }]);
    expect(Buffer.from(page as Uint8Array).equals(line)).toBe(true);
    const delta = JSON.parse(Buffer.from(CENTRIFUGE_JSON_DELTA_CODEC.msg(meta, payload)).toString("utf8")) as { push: { pub: { info: unknown } } };
    expect(delta.push.pub.info).toEqual(ANN);
  });

  it("Protobuf — the publication push's ClientInfo decodes to the publisher, its infos as JSON bytes", () => {
    const frame = protoPublicationPush(meta, payload);
    expect(frame.equals(encodeProtoReply(publicationReply(meta, payload)))).toBe(true);
    const [reply] = decodeDelimited("Reply", frame, 1, { mayNotFitJson: false }) as { push: { pub: { info: unknown; offset: number } } }[];
    expect(reply?.push.pub).toMatchObject({ info: ANN, offset: 42 });
    const [page] = CENTRIFUGE_PROTOBUF_CODEC.msgs("cf.room", [{ channel: "cf.room", seq: 42, ts: 1, payload, publisher: publisherHeader(ANN) }]);
    expect(Buffer.from(page as Uint8Array).equals(frame)).toBe(true);
  });
});
