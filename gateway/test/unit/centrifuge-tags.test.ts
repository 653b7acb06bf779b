import { describe, expect, it } from "vitest";
import { parseJsHeaders } from "../../src/broker/jetstream/headers.js";
import { CENTRIFUGE_JSON_CODEC, CENTRIFUGE_JSON_DELTA_CODEC, publicationPush } from "../../src/protocol/centrifuge/json.js";
import { CENTRIFUGE_PROTOBUF_CODEC, protoPublicationPush } from "../../src/protocol/centrifuge/protobuf.js";
import { decodeDelimited } from "../../src/protocol/centrifuge/proto-wire.js";
import { parseBatch } from "../../src/protocol/batch.js";
import { readStoredTags, readTags, TAGS_HEADER, tagsHeader } from "../../src/protocol/tags.js";

const TAGS = { kind: "invoice", región: "señal ✓" };
const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s));

describe("tags — reading and storing", () => {
  it("an object of at most 32 strings within 1,024 bytes of JSON; {} and null are none", () => {
    expect(readTags(TAGS)).toEqual({ tags: TAGS });
    expect(readTags({})).toEqual({});
    expect(readTags(null)).toEqual({});
    // A key named "error" is a tag like any other.
    expect(readTags({ error: "x" })).toEqual({ tags: { error: "x" } });
    expect(readTags(["a"])).toEqual({ error: "tags must be an object of strings" });
    expect(readTags({ a: 1 })).toEqual({ error: "tags must be an object of strings" });
    expect(readTags(Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, ""])))).toEqual({ error: "tags holds at most 32 keys (this one 33)" });
    expect(readTags({ a: "x".repeat(1_020) })).toEqual({ error: "tags must encode to at most 1024 bytes of JSON" });
  });

  it("the header is one line of ASCII read back as written; what another NATS client writes instead is ignored", () => {
    const h = tagsHeader(TAGS);
    expect(/^[\x20-\x7e]+$/.test(h)).toBe(true);
    expect(readStoredTags(h)).toEqual(TAGS);
    expect(readStoredTags("not json")).toBeUndefined();
    expect(readStoredTags('{"a":1}')).toBeUndefined();
    expect(readStoredTags(undefined)).toBeUndefined();
  });

  it("js headers — a republished message with tags and a publisher (the general loop)", () => {
    const msg = bytes(
      `NATS/1.0\r\nNats-Stream: FANOUT_CHANNELS\r\nNats-Subject: cf.a\r\nNats-Sequence: 6\r\nNats-Time-Stamp: 2026-11-22T18:02:18Z\r\nNats-Last-Sequence: 4\r\n${TAGS_HEADER}: ${tagsHeader(TAGS)}\r\nFanout-Publisher: {"user":"u","client":"c"}\r\n\r\n`,
    );
    expect(parseJsHeaders(msg, msg.length)).toMatchObject({ subject: "cf.a", seq: 6, tags: tagsHeader(TAGS), publisher: '{"user":"u","client":"c"}' });
  });

  it("the HTTP batch reads tags; the /ws batch does not", () => {
    expect(parseBatch([{ channel: "a", data: 1, tags: { k: "v" } }], 10, true)).toEqual([{ channel: "a", data: 1, tags: { k: "v" } }]);
    expect(parseBatch([{ channel: "a", data: 1, tags: { k: 1 } }], 10, true)).toEqual([{ code: "bad_request", message: "tags must be an object of strings" }]);
    expect(parseBatch([{ channel: "a", data: 1, tags: { k: "v" } }], 10)).toEqual([{ channel: "a", data: 1 }]);
  });
});

describe("tags — the Centrifuge door's publications", () => {
  const meta = { channel: "cf.room", pattern: "cf.room", seq: 42, ts: 1, tags: tagsHeader(TAGS) };
  const payload = bytes('{"n":1}');

  it("JSON: live, pages (recovery) and delta subscriptions carry them", () => {
    expect(JSON.parse(publicationPush(meta, payload).toString("utf8"))).toEqual({
      push: { channel: "cf:room", pub: { data: { n: 1 }, offset: 42, tags: TAGS } },
    });
    const [page] = CENTRIFUGE_JSON_CODEC.msgs("cf.room", [{ channel: "cf.room", seq: 42, ts: 1, payload, tags: tagsHeader(TAGS) }]);
    expect(Buffer.from(page as Uint8Array).equals(publicationPush(meta, payload))).toBe(true);
    const delta = JSON.parse(Buffer.from(CENTRIFUGE_JSON_DELTA_CODEC.msg(meta, payload)).toString("utf8")) as { push: { pub: { tags: unknown } } };
    expect(delta.push.pub.tags).toEqual(TAGS);
  });

  it("Protobuf: the publication's tags map", () => {
    const frame = protoPublicationPush(meta, payload);
    const [reply] = decodeDelimited("Reply", frame, 1, { mayNotFitJson: false }) as { push: { pub: { tags: unknown; offset: number } } }[];
    expect(reply?.push.pub).toMatchObject({ tags: TAGS, offset: 42 });
    const [page] = CENTRIFUGE_PROTOBUF_CODEC.msgs("cf.room", [{ channel: "cf.room", seq: 42, ts: 1, payload, tags: tagsHeader(TAGS) }]);
    expect(Buffer.from(page as Uint8Array).equals(frame)).toBe(true);
  });
});
