// The Centrifuge door's Protobuf format in process: the hand-written encoder and decoder against the real
// SDK's Protobuf build (centrifuge 5.7.4 on a fake WebSocket: it encodes the commands we decode and decodes
// the replies and pushes we encode), round trips of every reply shape, and the bounds of the decoder.
import { Centrifuge } from "centrifuge/build/protobuf";
import { describe, expect, it } from "vitest";
import { readCommand } from "../../src/centrifugo/client/commands.js";
import { MAX_COMMANDS_PER_FRAME } from "../../src/protocol/centrifuge/json.js";
import { decodeDelimited, encodeDelimited, MAX_PROTO_DEPTH } from "../../src/protocol/centrifuge/proto-wire.js";
import {
  CENTRIFUGE_PROTOBUF_CODEC,
  decodeProtoCommands,
  encodeProtoFrame,
  encodeProtoReply,
  protoPublicationPush,
} from "../../src/protocol/centrifuge/protobuf.js";
import { publicationReply, type Reply } from "../../src/protocol/centrifuge/shapes.js";
import { requestId } from "../../src/protocol/centrifuge/requests.js";
import { ErrorCode } from "../../src/protocol/codes.js";
import { CODECS } from "../../src/protocol/codecs.js";

/** The replies a frame of ours holds, decoded by our decoder (what the SDK reads is checked below). */
const replies = (b: Uint8Array): Record<string, unknown>[] => decodeDelimited("Reply", b, 1000, { mayNotFitJson: false });
const commands = (b: Uint8Array): unknown[] => {
  const d = decodeProtoCommands(b);
  if (!d.ok) throw new Error(d.message);
  return d.value as unknown[];
};
const varint = (n: number): number[] => {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  out.push(n);
  return out;
};
const refused = (bytes: number[]) => decodeProtoCommands(Uint8Array.from(bytes));

/** A WebSocket the SDK drives in process: what it sends is kept, what the test pushes it reads. */
class FakeSocket {
  static last: FakeSocket | undefined;
  readonly sent: Uint8Array[] = [];
  binaryType = "";
  onopen?: () => void;
  onmessage?: (e: { data: ArrayBuffer }) => void;
  onclose?: (e: { code: number; reason: string }) => void;
  onerror?: (e: unknown) => void;
  constructor(
    readonly url: string,
    readonly protocol?: string,
  ) {
    FakeSocket.last = this;
    queueMicrotask(() => this.onopen?.());
  }
  send(data: Uint8Array): void {
    this.sent.push(new Uint8Array(data));
  }
  close(): void {
    queueMicrotask(() => this.onclose?.({ code: 1000, reason: "" }));
  }
  push(bytes: Uint8Array): void {
    const copy = new Uint8Array(bytes);
    this.onmessage?.({ data: copy.buffer });
  }
}

async function until<T>(f: () => T | undefined): Promise<T> {
  for (let i = 0; i < 500; i++) {
    const v = f();
    if (v !== undefined) return v;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error("timed out");
}

describe("centrifuge protobuf — against the SDK's Protobuf build", () => {
  it("protobuf — the SDK's connect, subscribe, publish and rpc decode to the commands the JSON format gives; our replies and pushes reach its events", async () => {
    const c = new Centrifuge("ws://fake/connection/websocket", {
      websocket: FakeSocket,
      token: "tok",
      data: new TextEncoder().encode('{"hello":1}'),
      name: "vectors",
    } as never);
    const connected = new Promise<{ client: string }>((r) => c.on("connected", r));
    c.connect();
    const ws = await until(() => FakeSocket.last);
    expect(ws.protocol).toBe("centrifuge-protobuf");
    const [connect] = await until(() => (ws.sent[0] ? commands(ws.sent[0]) : undefined));
    expect(connect).toMatchObject({ id: 1, connect: { token: "tok", data: { hello: 1 }, name: "vectors" } });
    expect(readCommand(connect)).toMatchObject({ method: "connect", id: 1, token: "tok", data: { hello: 1 } });
    ws.push(encodeProtoReply({ id: 1, connect: { client: "c-1", version: "", ping: 25, pong: true, expires: true, ttl: 60 } }));
    expect((await connected).client).toBe("c-1");

    const sub = c.newSubscription("chat:a", { since: { offset: 7, epoch: "E" }, joinLeave: true } as never);
    const pubs: { data: Uint8Array; offset?: number; info?: { client: string; connInfo?: Uint8Array } }[] = [];
    const joins: { info: { client: string; user: string } }[] = [];
    sub.on("publication", (p) => pubs.push(p as never));
    sub.on("join", (j) => joins.push(j as never));
    const subscribed = new Promise<{ recovered: boolean; streamPosition?: { offset: number; epoch: string } }>((r) => sub.on("subscribed", r as never));
    sub.subscribe();
    const [subscribe] = await until(() => (ws.sent[1] ? commands(ws.sent[1]) : undefined));
    expect(readCommand(subscribe)).toMatchObject({ method: "subscribe", id: 2, channel: "chat:a", recover: true, offset: 7, epoch: "E", joinLeave: true });
    const fields = { firstSeq: 1, lastSeq: 9, epoch: "E" };
    ws.push(encodeProtoFrame({ op: "ok", id: requestId({ kind: "subscribe", id: 2, mode: "recovered", offset: 7 }), fields }));
    const s = await subscribed;
    expect(s.recovered).toBe(true);
    // The SDK's Protobuf build hands uint64 offsets to apps as protobufjs Longs.
    expect([Number(s.streamPosition?.offset), s.streamPosition?.epoch]).toEqual([7, "E"]);

    // A coalesced frame of two publications, JSON bytes and binary bytes, then a join with its info.
    const meta = { channel: "chat.a", pattern: "chat.a", ts: 1 };
    const a = protoPublicationPush({ ...meta, seq: 8 }, Buffer.from('{"n":8}'));
    const b = protoPublicationPush({ ...meta, seq: 12, type: "application/octet-stream" }, Buffer.from([0, 255]));
    ws.push(CENTRIFUGE_PROTOBUF_CODEC.batch([a, b]));
    ws.push(encodeProtoFrame({ op: "join", channel: "chat.a", client: "c-2", user: "u2", info: { name: "x" } }));
    await until(() => (pubs.length === 2 && joins.length === 1 ? true : undefined));
    expect(new TextDecoder().decode(pubs[0]?.data)).toBe('{"n":8}');
    expect(pubs.map((p) => Number(p.offset))).toEqual([8, 12]);
    expect([...(pubs[1]?.data ?? [])]).toEqual([0, 255]);
    expect(joins[0]?.info).toMatchObject({ client: "c-2", user: "u2" });

    const published = sub.publish(new TextEncoder().encode("[1,2]"));
    const [publish] = await until(() => (ws.sent[2] ? commands(ws.sent[2]) : undefined));
    expect(readCommand(publish)).toEqual({ method: "publish", id: 3, channel: "chat:a", data: [1, 2] });
    ws.push(encodeProtoFrame({ op: "ok", id: requestId({ kind: "publish", id: 3 }), fields: { seq: 13 } }));
    await published;

    const rpc = c.rpc("year", new TextEncoder().encode('{"q":1}'));
    const [call] = await until(() => (ws.sent[3] ? commands(ws.sent[3]) : undefined));
    expect(readCommand(call)).toEqual({ method: "rpc", id: 4, rpcMethod: "year", data: { q: 1 } });
    ws.push(encodeProtoFrame({ op: "ok", id: requestId({ kind: "rpc", id: 4 }), fields: { data: { y: 2026 } } }));
    expect(new TextDecoder().decode((await rpc).data as Uint8Array)).toBe('{"y":2026}');

    const hist = sub.history({ limit: 2, reverse: true });
    const [history] = await until(() => (ws.sent[4] ? commands(ws.sent[4]) : undefined));
    expect(readCommand(history)).toEqual({ method: "history", id: 5, params: { channel: "chat:a", limit: 2, reverse: true } });
    ws.push(
      encodeProtoReply({
        id: 5,
        history: {
          publications: [
            { data: { n: 12 }, offset: 12 },
            { data: null, b64data: "AP8=", offset: 8 },
          ],
          epoch: "E",
          offset: 12,
        },
      }),
    );
    const h = await hist;
    expect(h.publications.map((p) => [Number(p.offset), [...(p.data as Uint8Array)]])).toEqual([
      [12, [...Buffer.from('{"n":12}')]],
      [8, [0, 255]],
    ]);
    expect([Number(h.offset), h.epoch]).toEqual([12, "E"]);

    // The server's ping (the empty reply) is answered with the empty command: the pong.
    ws.push(encodeProtoReply({}));
    const pong = await until(() => (ws.sent[5] ? commands(ws.sent[5]) : undefined));
    expect(pong.map(readCommand)).toEqual([{ method: "pong" }]);

    const disconnected = new Promise<{ code: number }>((r) => c.on("disconnected", r as never));
    ws.push(encodeProtoFrame({ op: "err", code: ErrorCode.Forbidden, message: "revoked", temporary: false }));
    // Force reconnect (3011): the SDK goes connecting again, not disconnected; a 3501 push disconnects it.
    ws.push(encodeProtoReply({ push: { disconnect: { code: 3501, reason: "bad request", reconnect: false } } }));
    expect((await disconnected).code).toBe(3501);
  });
});

describe("centrifuge protobuf — encoder and decoder", () => {
  it("round trip — every reply and push shape decodes to what was encoded", () => {
    const cases: Reply[] = [
      {},
      { id: 1, error: { code: 103, message: "forbidden: no", temporary: true } },
      {
        id: 2,
        connect: {
          client: "c",
          version: "v",
          expires: true,
          ttl: 30,
          data: { a: 1 },
          ping: 25,
          pong: true,
          subs: { "chat:a": { recoverable: true, offset: 5, epoch: "E" } },
        },
      },
      { id: 3, subscribe: { recoverable: true, positioned: true, epoch: "E", offset: 2 ** 53 - 1, recovered: true, was_recovering: true, data: "x" } },
      { id: 4, presence: { presence: { c1: { client: "c1", user: "u", conn_info: { n: 1 } } } } },
      { id: 5, presence_stats: { num_clients: 3, num_users: 2 } },
      { id: 6, rpc: { data: [1, "two"] } },
      { id: 7, refresh: { client: "c", expires: true, ttl: 10 } },
      { id: 8, sub_refresh: { expires: true, ttl: 9 } },
      {
        push: {
          channel: "a",
          pub: {
            data: { x: 1 },
            offset: 4,
            tags: JSON.parse('{"k":"v","__proto__":"p"}') as Record<string, string>,
            delta: true,
            time: 1_700_000_000_000,
            info: { client: "c", user: "u" },
          },
        },
      },
      { push: { channel: "a", leave: { info: { client: "c", user: "u", chan_info: true } } } },
      { push: { channel: "a", unsubscribe: { code: 2000, reason: "bye" } } },
      { push: { message: { data: { m: 1 } } } },
      { push: { channel: "a", subscribe: { recoverable: true, epoch: "E", offset: 3, positioned: true, data: 1 } } },
      { push: { connect: { client: "c", version: "v", ttl: 5, ping: 25, pong: true } } },
      { push: { disconnect: { code: 3001, reason: "shutdown", reconnect: true } } },
      { push: { refresh: { expires: true, ttl: 1 } } },
    ];
    for (const r of cases) expect(replies(encodeProtoReply(r))).toEqual([r]);
  });

  it("decoder — several commands per frame; unknown fields skipped; JSON data as values, other bytes as bytes", () => {
    const frame = Buffer.concat([
      encodeDelimited("Command", { id: 1, connect: { token: "t" } }),
      encodeDelimited("Command", {}),
      encodeDelimited("Command", { id: 2, publish: { channel: "c", data: Buffer.from([0xff, 0]) } }),
    ]);
    expect(decodeProtoCommands(frame)).toEqual({
      ok: true,
      value: [{ id: 1, connect: { token: "t" } }, {}, { id: 2, publish: { channel: "c", data: new Uint8Array([0xff, 0]) } }],
      mayNotFitJson: true,
    });
    // Field 99 of every wire type (varint, 64-bit, bytes, 32-bit) before the id: skipped.
    const unknown = [
      ...varint(99 * 8),
      5,
      ...varint(99 * 8 + 1),
      1,
      2,
      3,
      4,
      5,
      6,
      7,
      8,
      ...varint(99 * 8 + 2),
      2,
      9,
      9,
      ...varint(99 * 8 + 5),
      1,
      2,
      3,
      4,
      8,
      7,
    ];
    expect(refused([unknown.length, ...unknown])).toEqual({ ok: true, value: [{ id: 7 }], mayNotFitJson: false });
    expect(decodeProtoCommands(encodeDelimited("Command", { id: 3, publish: { channel: "c", data: Buffer.from("1e999") } }))).toMatchObject({
      ok: true,
      mayNotFitJson: true,
    });
    // uint64 offsets past 2^53 arrive unsafe and are refused by the command reader, not rounded.
    const body = [10, 1, 99, ...varint(7 * 8), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    const sub = [8, 9, ...varint(5 * 8 + 2), body.length, ...body];
    const d = refused([sub.length, ...sub]);
    expect(d.ok && readCommand((d.value as unknown[])[0])).toMatchObject({ id: 9, bad: expect.stringMatching(/offset/) });
    expect(CENTRIFUGE_PROTOBUF_CODEC.decode(new Uint8Array([0]).buffer, false)).toMatchObject({ ok: false, code: ErrorCode.BadRequest });
  });

  it("bounds — lengths that lie, cut varints, wrong wire types, deep nesting and too many commands are refused with bad_request, never thrown", () => {
    const bad = { ok: false, code: ErrorCode.BadRequest };
    expect(refused([5, 8, 1])).toMatchObject({ ...bad, message: expect.stringMatching(/5 bytes is more than the 2 left/) });
    expect(refused([0xff, 0xff, 0xff, 0xff, 0x0f])).toMatchObject(bad); // a length of 4 GiB: no allocation
    expect(refused([0x80])).toMatchObject({ ...bad, message: "a varint is cut short" });
    expect(refused([11, ...Array<number>(11).fill(0xff)])).toMatchObject(bad);
    expect(refused([3, 0x22, 5, 0x0a])).toMatchObject(bad); // connect (field 4) longer than its command
    expect(refused([2, 0x22, 0x0a, 0x05])).toMatchObject(bad);
    expect(refused([2, 0x08 + 2, 0])).toMatchObject(bad); // a nested length beyond its parent
    expect(refused([2, 0x20, 1])).toMatchObject({ ...bad, message: expect.stringMatching(/wire type 0, not 2/) }); // connect as a varint
    expect(refused([2, 0x0b, 0])).toMatchObject({ ...bad, message: expect.stringMatching(/wire type 3/) }); // a group
    expect(refused([2, 0x00, 0])).toMatchObject({ ...bad, message: "field number 0" });
    expect(refused([4, 0x22, 2, 0x0a, 0x01])).toMatchObject(bad); // a token cut by its connect's end
    expect(refused([4, 0x22, 2, 0x0a, 0x00].slice(0, 4))).toMatchObject(bad);
    expect(refused([5, 0x22, 3, 0x0a, 1, 0xff])).toMatchObject({ ...bad, message: "token is not UTF-8" });
    // FilterNode nests itself: MAX_PROTO_DEPTH deep is refused.
    let node: Uint8Array = new Uint8Array(0);
    for (let i = 0; i < MAX_PROTO_DEPTH + 2; i++) node = Uint8Array.from([0x32, ...varint(node.length), ...node]);
    const subscribe = Uint8Array.from([0x6a, ...varint(node.length), ...node]);
    const command = Uint8Array.from([0x2a, ...varint(subscribe.length), ...subscribe]);
    expect(refused([...varint(command.length), ...command])).toMatchObject({ ...bad, message: expect.stringMatching(/nest deeper/) });
    expect(refused(Array<number>(MAX_COMMANDS_PER_FRAME).fill(0))).toMatchObject({ ok: true });
    expect(refused(Array<number>(MAX_COMMANDS_PER_FRAME + 1).fill(0))).toMatchObject({ ...bad, message: expect.stringMatching(/at most 256/) });
  });

  it("publication push — the hot path's bytes are the generic encoder's, for every size of payload, channel and offset", () => {
    for (const size of [0, 1, 127, 128, 16_383, 16_384, 70_000])
      for (const seq of [0, 1, 127, 128, 2 ** 32, Number.MAX_SAFE_INTEGER])
        for (const channel of ["a", "chat.room.1", `x.${"é".repeat(100)}`]) {
          const meta = { channel, pattern: channel, seq, ts: 1, ...(size % 2 ? { type: "application/octet-stream" } : {}) };
          const payload = Buffer.alloc(size, 0x31);
          expect(protoPublicationPush(meta, payload).equals(encodeProtoReply(publicationReply(meta, payload)))).toBe(true);
        }
  });

  it("codec — the fourth codec, its slot, binary frames; a frame with no counterpart is no bytes", () => {
    expect(CODECS[CENTRIFUGE_PROTOBUF_CODEC.slot]).toBe(CENTRIFUGE_PROTOBUF_CODEC);
    expect(CENTRIFUGE_PROTOBUF_CODEC.binary).toBe(true);
    expect(encodeProtoFrame({ op: "live", sub: "a", seq: 3 }).length).toBe(0);
    const page = CENTRIFUGE_PROTOBUF_CODEC.msgs("chat.*", [
      { channel: "chat.a", seq: 1, ts: 1, payload: Buffer.from("1") },
      { channel: "news%2Esport", seq: 3, ts: 2, payload: Buffer.from("plain") },
    ]);
    expect(replies(CENTRIFUGE_PROTOBUF_CODEC.batch(page))).toEqual([
      { push: { channel: "chat:a", pub: { data: 1, offset: 1 } } },
      { push: { channel: "news.sport", pub: { data: new Uint8Array(Buffer.from("plain")), offset: 3 } } },
    ]);
  });
});
