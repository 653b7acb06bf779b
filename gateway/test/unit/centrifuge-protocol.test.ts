// The Centrifuge client door's pure parts, in process: reading commands, the JSON lines decoder, the
// recovery plan, the ids that carry a command to its reply, every reply and push shape, and the code maps.
import { describe, expect, it } from "vitest";
import { readCommand } from "../../src/centrifugo/client/commands.js";
import { planSubscribe } from "../../src/centrifugo/client/recovery.js";
import type { SubscribeCommand } from "../../src/centrifugo/client/commands.js";
import { CLIENT_ERROR_OF, ClientError, Disconnect, disconnectOf, reconnects } from "../../src/protocol/centrifuge/codes.js";
import {
  CENTRIFUGE_JSON_CODEC,
  decodeCommands,
  encodeFrame,
  encodeReply,
  MAX_COMMANDS_PER_FRAME,
  publicationPush,
} from "../../src/protocol/centrifuge/json.js";
import { publicationReply } from "../../src/protocol/centrifuge/shapes.js";
import { requestId, requestOf, type Request } from "../../src/protocol/centrifuge/requests.js";
import { CloseCode, ErrorCode } from "../../src/protocol/codes.js";
import { CODECS, codecOf } from "../../src/protocol/codecs.js";
import { SUBPROTOCOLS } from "../../src/protocol/subprotocol.js";

const sub = (o: Partial<SubscribeCommand> = {}): SubscribeCommand => ({
  method: "subscribe",
  id: 1,
  channel: "chat:a",
  recover: false,
  offset: 0,
  epoch: "",
  positioned: false,
  recoverable: false,
  joinLeave: false,
  delta: false,
  ...o,
});
const json = (b: Uint8Array | string): unknown => JSON.parse(typeof b === "string" ? b : Buffer.from(b).toString("utf8"));

describe("centrifuge commands", () => {
  it("commands — the empty command is the pong; a method with an id is read with its fields", () => {
    expect(readCommand({})).toEqual({ method: "pong" });
    expect(readCommand({ id: 0 })).toEqual({ method: "pong" });
    expect(readCommand({ id: 3, connect: { token: "t", data: { a: 1 } } })).toEqual({ method: "connect", id: 3, token: "t", data: { a: 1 }, subs: {} });
    expect(readCommand({ id: 3, connect: { subs: { "a:b": { recover: true, offset: 9, epoch: "e" } } } })).toMatchObject({
      subs: { "a:b": { recover: true, offset: 9, epoch: "e" } },
    });
    expect(readCommand({ id: 3, connect: { subs: { "a:b": { offset: -1 } } } })).toEqual({ bad: "connect.subs.offset must be an integer >= 0", id: 3 });
    expect(readCommand({ id: 7, sub_refresh: { channel: "a:b", token: "t" } })).toEqual({ method: "sub_refresh", id: 7, channel: "a:b", token: "t" });
    expect(readCommand({ id: 8, subscribe: { channel: "a:b", token: "t", delta: "fossil" } })).toMatchObject({ token: "t", delta: true });
    expect(readCommand({ id: 8, subscribe: { channel: "a:b", delta: "gzip" } })).toEqual({ bad: 'subscribe.delta must be "fossil"', id: 8 });
    expect(readCommand({ id: 4, subscribe: { channel: "chat:a", recover: true, offset: 17, epoch: "e", recoverable: true, join_leave: true } })).toEqual(
      sub({ id: 4, recover: true, offset: 17, epoch: "e", recoverable: true, joinLeave: true }),
    );
    expect(readCommand({ id: 5, rpc: { method: "getYear" } })).toEqual({ method: "rpc", id: 5, rpcMethod: "getYear", data: null });
    expect(readCommand({ id: 6, history: { channel: "c", limit: 2, reverse: true } })).toEqual({
      method: "history",
      id: 6,
      params: { channel: "c", limit: 2, reverse: true },
    });
    expect(readCommand({ send: { data: 1 } })).toEqual({ method: "send", data: 1 });
  });

  it("commands — what cannot be read says why, with the id when there is one", () => {
    expect(readCommand([])).toEqual({ bad: "a command must be a JSON object" });
    expect(readCommand({ id: -1, connect: {} })).toMatchObject({ bad: expect.stringMatching(/^id must be/) });
    expect(readCommand({ id: 2.5, connect: {} })).toMatchObject({ bad: expect.stringMatching(/^id must be/) });
    expect(readCommand({ id: 7 })).toEqual({ bad: "the command names no method", id: 7 });
    expect(readCommand({ id: 7, publish: { channel: "c", data: 1 }, rpc: { method: "m" } })).toMatchObject({ id: 7, bad: expect.stringMatching(/2 methods/) });
    expect(readCommand({ subscribe: { channel: "c" } })).toEqual({ bad: "subscribe needs an id: its reply carries it" });
    expect(readCommand({ id: 8, subscribe: { channel: "" } })).toMatchObject({ id: 8 });
    expect(readCommand({ id: 8, subscribe: { channel: "c", offset: -1 } })).toMatchObject({ id: 8, bad: expect.stringMatching(/offset/) });
    expect(readCommand({ id: 9, publish: { channel: "c" } })).toEqual({ bad: "publish.data is missing", id: 9 });
    expect(readCommand({ id: 9, refresh: {} })).toMatchObject({ id: 9, bad: expect.stringMatching(/token/) });
  });

  it("decoder — several commands per frame, one per line, blank lines skipped; bad JSON or too many refuse the frame", () => {
    expect(decodeCommands('{"id":1,"connect":{}}\n\n{"id":2,"subscribe":{"channel":"a"}}\n')).toEqual({
      ok: true,
      value: [
        { id: 1, connect: {} },
        { id: 2, subscribe: { channel: "a" } },
      ],
      mayNotFitJson: false,
    });
    expect(decodeCommands('{"id":1}\n{nope')).toMatchObject({ ok: false, code: ErrorCode.BadJson });
    expect(decodeCommands(Array.from({ length: MAX_COMMANDS_PER_FRAME + 1 }, () => "{}").join("\n"))).toMatchObject({ ok: false, code: ErrorCode.BadRequest });
    expect(decodeCommands(`{"id":1,"publish":{"channel":"a","data":1e999}}`)).toMatchObject({ ok: true, mayNotFitJson: true });
    expect(decodeCommands(`${"[".repeat(200)}${"]".repeat(200)}`)).toMatchObject({ ok: false, code: ErrorCode.BadRequest });
    expect(CENTRIFUGE_JSON_CODEC.decode(new Uint8Array([123, 125]).buffer, true)).toMatchObject({ ok: false, code: ErrorCode.BadJson });
  });
});

describe("centrifuge recovery plan", () => {
  const st = { firstSeq: 10, lastSeq: 50, epoch: "E" };

  it("recovery — live without a position; positioned after the top; no history: live", () => {
    expect(planSubscribe(sub(), st)).toEqual({ mode: "live", offset: 0 });
    expect(planSubscribe(sub({ recoverable: true }), st)).toEqual({ mode: "positioned", offset: 50, from: { seq: 51, epoch: "E" } });
    expect(planSubscribe(sub({ recover: true, epoch: "E", offset: 20 }), undefined)).toEqual({ mode: "live", offset: 0 });
  });

  it("recovery — the same epoch and a position the stream holds: recovered from the client's offset, however far back", () => {
    expect(planSubscribe(sub({ recover: true, epoch: "E", offset: 20 }), st)).toEqual({ mode: "recovered", offset: 20, from: { seq: 21, epoch: "E" } });
    // Just before the first stored message: nothing of what follows was removed.
    expect(planSubscribe(sub({ recover: true, epoch: "E", offset: 9 }), st)).toMatchObject({ mode: "recovered", offset: 9 });
    // Past the top (the client cannot be ahead): taken as the top, nothing skipped.
    expect(planSubscribe(sub({ recover: true, epoch: "E", offset: 70 }), st)).toMatchObject({ mode: "recovered", offset: 50, from: { seq: 51 } });
  });

  it("recovery — another epoch, a position retention removed, or one before the resume window: not recovered, live after the top", () => {
    const not = { mode: "unrecovered", offset: 50, from: { seq: 51, epoch: "E" } };
    expect(planSubscribe(sub({ recover: true, epoch: "OLD", offset: 20 }), st)).toEqual(not);
    expect(planSubscribe(sub({ recover: true, epoch: "", offset: 20 }), st)).toEqual(not);
    expect(planSubscribe(sub({ recover: true, epoch: "E", offset: 5 }), st)).toEqual(not);
    expect(planSubscribe(sub({ recover: true, epoch: "E", offset: 20 }), { ...st, resumeFrom: 30 })).toEqual(not);
  });
});

describe("centrifuge replies and pushes", () => {
  const subscribe = (mode: Extract<Request, { kind: "subscribe" }>["mode"], offset: number): string => requestId({ kind: "subscribe", id: 9, mode, offset });

  it("ids — each request survives the round trip; ids the door did not make are none", () => {
    const rs: Request[] = [
      { kind: "publish", id: 1 },
      { kind: "unsubscribe", id: 4294967295 },
      { kind: "rpc", id: 3 },
      { kind: "refresh", id: 2 },
      { kind: "subscribe", id: 7, mode: "recovered", offset: 9007199254740991 },
    ];
    for (const r of rs) expect(requestOf(requestId(r))).toEqual(r);
    for (const r of rs) expect(requestId(r).length).toBeLessThanOrEqual(64);
    for (const other of [undefined, 5, "5", "cfp:1:2", "cfsr:1", "cfx:1", "cfpl:1"]) expect(requestOf(other)).toBeUndefined();
  });

  it("subscribe — recovered, not recovered, positioned and live replies", () => {
    const fields = { firstSeq: 10, lastSeq: 80, epoch: "E" };
    expect(json(encodeFrame({ op: "ok", id: subscribe("recovered", 20), fields }))).toEqual({
      id: 9,
      subscribe: { recoverable: true, positioned: true, epoch: "E", offset: 20, was_recovering: true, recovered: true },
    });
    expect(json(encodeFrame({ op: "ok", id: subscribe("unrecovered", 50), fields }))).toEqual({
      id: 9,
      subscribe: { recoverable: true, positioned: true, epoch: "E", offset: 50, was_recovering: true },
    });
    expect(json(encodeFrame({ op: "ok", id: subscribe("positioned", 50), fields: { ...fields, data: { x: 1 } } }))).toEqual({
      id: 9,
      subscribe: { recoverable: true, positioned: true, epoch: "E", offset: 50, data: { x: 1 } },
    });
    expect(json(encodeFrame({ op: "ok", id: subscribe("live", 0), fields: { epoch: "E" } }))).toEqual({ id: 9, subscribe: {} });
    // The stream changed between the door's look and the start: not recovered, from the stream's first message.
    expect(json(encodeFrame({ op: "ok", id: subscribe("recovered", 20), fields: { ...fields, epoch: "F", epochChanged: true, truncated: true } }))).toEqual({
      id: 9,
      subscribe: { recoverable: true, positioned: true, epoch: "F", offset: 9, was_recovering: true },
    });
  });

  it("replies — publish, unsubscribe, rpc, refresh; an error with its client code; a catch-up's live marker is nothing", () => {
    expect(json(encodeFrame({ op: "ok", id: requestId({ kind: "publish", id: 2 }), fields: { seq: 5 } }))).toEqual({ id: 2, publish: {} });
    expect(json(encodeFrame({ op: "ok", id: requestId({ kind: "unsubscribe", id: 3 }) }))).toEqual({ id: 3, unsubscribe: {} });
    expect(json(encodeFrame({ op: "ok", id: requestId({ kind: "rpc", id: 4 }), fields: { data: [1] } }))).toEqual({ id: 4, rpc: { data: [1] } });
    const exp = Math.floor(Date.now() / 1000) + 100;
    expect(json(encodeFrame({ op: "ok", id: requestId({ kind: "refresh", id: 5 }), fields: { exp } }))).toMatchObject({ id: 5, refresh: { expires: true } });
    expect(json(encodeFrame({ op: "err", id: requestId({ kind: "publish", id: 6 }), code: ErrorCode.Forbidden, message: "no", temporary: false }))).toEqual({
      id: 6,
      error: { code: 103, message: "forbidden: no" },
    });
    expect(json(encodeFrame({ op: "err", id: requestId({ kind: "rpc", id: 7 }), code: ErrorCode.HookUnavailable, message: "down", temporary: true }))).toEqual({
      id: 7,
      error: { code: 100, message: "hook_unavailable: down", temporary: true },
    });
    expect(encodeFrame({ op: "live", sub: "a", seq: 3 })).toBe("");
  });

  it("pushes — an error without a request is a disconnect push that reconnects; unsubscribe, join, leave name the Centrifugo channel", () => {
    expect(json(encodeFrame({ op: "err", code: ErrorCode.SlowConsumer, message: "slow", temporary: true }))).toEqual({
      push: { disconnect: { code: Disconnect.InsufficientState, reason: "slow_consumer: slow", reconnect: true } },
    });
    expect(json(encodeFrame({ op: "err", code: ErrorCode.Forbidden, message: "revoked", temporary: false }))).toMatchObject({
      push: { disconnect: { code: Disconnect.ForceReconnect, reconnect: true } },
    });
    expect(json(encodeFrame({ op: "unsub", channel: "chat.room.1", reason: "bye" }))).toEqual({
      push: { channel: "chat:room.1", unsubscribe: { code: 2000, reason: "bye" } },
    });
    expect(json(encodeFrame({ op: "join", channel: "chat.a", client: "c1", user: "u", info: { n: 1 } }))).toEqual({
      push: { channel: "chat:a", join: { info: { client: "c1", user: "u", conn_info: { n: 1 } } } },
    });
    expect(json(encodeFrame({ op: "leave", channel: "news%2Esport", client: "c1", user: null }))).toEqual({
      push: { channel: "news.sport", leave: { info: { client: "c1", user: "" } } },
    });
  });

  it("publications — JSON verbatim, other text as a string, bytes as base64; the offset is the stream seq", () => {
    const meta = { channel: "chat.a", pattern: "chat.a", seq: 42, ts: 1 };
    expect(Buffer.from(publicationPush(meta, Buffer.from('{"b":  [1,2]}'))).toString()).toBe(
      '{"push":{"channel":"chat:a","pub":{"data":{"b":  [1,2]},"offset":42}}}',
    );
    expect(json(publicationPush(meta, Buffer.from("plain text")))).toEqual({ push: { channel: "chat:a", pub: { data: "plain text", offset: 42 } } });
    expect(json(publicationPush({ ...meta, type: "image/png" }, Buffer.from([0, 255])))).toEqual({
      push: { channel: "chat:a", pub: { data: "AP8=", offset: 42 } },
    });
    // The hot path's bytes are the generic encoder's.
    for (const m of [meta, { ...meta, type: "image/png" }])
      expect(publicationPush(m, Buffer.from("1")).toString()).toBe(encodeReply(publicationReply(m, Buffer.from("1"))).toString());
    const page = CENTRIFUGE_JSON_CODEC.msgs("chat.*", [
      { channel: "chat.a", seq: 1, ts: 1, payload: Buffer.from("1") },
      { channel: "chat.b", seq: 3, ts: 2, payload: Buffer.from("2") },
    ]);
    expect(page.map(json)).toEqual([
      { push: { channel: "chat:a", pub: { data: 1, offset: 1 } } },
      { push: { channel: "chat:b", pub: { data: 2, offset: 3 } } },
    ]);
    expect(
      Buffer.from(CENTRIFUGE_JSON_CODEC.batch(page))
        .toString()
        .split("\n")
        .map((l) => json(l)),
    ).toEqual(page.map(json));
  });
});

describe("centrifuge codes", () => {
  it("codes — the gateway's closes become disconnect codes with the right advice", () => {
    expect(disconnectOf(CloseCode.GoingAway)).toBe(Disconnect.Shutdown);
    expect(disconnectOf(CloseCode.TokenExpired)).toBe(Disconnect.Expired);
    expect(disconnectOf(CloseCode.SlowConsumer)).toBe(Disconnect.Slow);
    expect(disconnectOf(CloseCode.StreamRecreated)).toBe(Disconnect.InsufficientState);
    expect(disconnectOf(CloseCode.DisconnectedFinal)).toBe(Disconnect.ForceNoReconnect);
    expect(disconnectOf(CloseCode.MessageTooBig)).toBe(1009);
    expect(disconnectOf(4501)).toBe(4501);
    expect(reconnects(disconnectOf(CloseCode.DisconnectedReconnect))).toBe(true);
    expect(reconnects(disconnectOf(CloseCode.DisconnectedFinal))).toBe(false);
    expect(reconnects(Disconnect.InvalidToken)).toBe(false);
  });

  it("codes — every wire error has a client error code of the protocol", () => {
    const known = new Set<number>(Object.values(ClientError));
    for (const code of Object.values(ErrorCode)) expect(known.has(CLIENT_ERROR_OF[code])).toBe(true);
    expect(CLIENT_ERROR_OF[ErrorCode.Forbidden]).toBe(103);
  });

  it("codec — the door's codec has its slot, and /ws never selects it", () => {
    expect(CODECS[CENTRIFUGE_JSON_CODEC.slot]).toBe(CENTRIFUGE_JSON_CODEC);
    expect(SUBPROTOCOLS).not.toContain(CENTRIFUGE_JSON_CODEC.subprotocol);
    expect(codecOf("")).not.toBe(CENTRIFUGE_JSON_CODEC);
  });
});
