import { describe, expect, it } from "vitest";
import { apiErrorOf, ApiCode } from "../../src/centrifugo/codes.js";
import { apiKeyOf } from "../../src/centrifugo/http.js";
import {
  broadcastParams,
  disconnectParams,
  globMatcher,
  historyParams,
  parseCommands,
  publishParams,
  refreshParams,
  subscribeParams,
  unsubscribeParams,
} from "../../src/centrifugo/request.js";
import { ErrorCode } from "../../src/protocol/codes.js";

describe("centrifugo request — the two URL forms' bodies", () => {
  it("POST /api takes one command or one per line, with optional ids; methods are case-insensitive", () => {
    expect(parseCommands('{"method":"publish","params":{"channel":"a","data":1}}')).toEqual([{ method: "publish", params: { channel: "a", data: 1 } }]);
    expect(parseCommands('{"id":3,"method":"INFO"}\n\n{"method":"history","params":{"channel":"a"}}\n')).toEqual([
      { id: 3, method: "info", params: {} },
      { method: "history", params: { channel: "a" } },
    ]);
    // A pretty-printed command is one JSON value over many lines.
    expect(parseCommands('{\n  "method": "info",\n  "params": {}\n}')).toEqual([{ method: "info", params: {} }]);
  });

  it("a body that is not JSON is refused whole; a line that is no command is its own error", () => {
    expect(parseCommands("{nope")).toEqual({ error: expect.stringContaining("not JSON") });
    expect(parseCommands('{"method":"info"}\n{nope')).toEqual({ error: expect.stringContaining("not JSON") });
    expect(parseCommands("")).toEqual({ error: "the body holds no command" });
    expect(parseCommands('[1]\n{"id":2,"params":{}}')).toEqual([{ bad: "a command must be a JSON object" }, { bad: "method must be a method's name", id: 2 }]);
  });

  it("the API key: X-API-Key, else Authorization: apikey <key>", () => {
    expect(apiKeyOf("k1", "apikey k2")).toBe("k1");
    expect(apiKeyOf("", "apikey k2")).toBe("k2");
    expect(apiKeyOf("", "ApiKey k2")).toBe("k2");
    expect(apiKeyOf("", "Bearer k2")).toBeUndefined();
    expect(apiKeyOf("", "apikey k2 extra")).toBeUndefined();
    expect(apiKeyOf("", "")).toBeUndefined();
  });
});

describe("centrifugo request — publish options", () => {
  it("maps the channel, takes data or b64data, and scopes nothing yet", () => {
    expect(publishParams({ channel: "chat:room.1", data: { a: 1 } })).toEqual({ name: "chat:room.1", channel: "chat.room.1", data: { a: 1 } });
    const bin = publishParams({ channel: "x", b64data: "AAEC/w==" });
    expect("bytes" in bin && bin.bytes).toEqual(Buffer.from([0, 1, 2, 255]));
    expect(publishParams({ channel: "x", data: null, idempotency_key: "k-1" })).toMatchObject({ data: null, idempotencyKey: "k-1" });
  });

  it.each([
    [{ channel: "x" }, /data is required/],
    [{ data: 1 }, /channel is required/],
    [{ channel: "chat:a..b", data: 1 }, /empty token/],
    [{ channel: "chat:", data: 1 }, /nothing after/],
    [{ channel: "x", data: 1, b64data: "AA==" }, /not both/],
    [{ channel: "x", b64data: "not base64!" }, /b64data/],
    [{ channel: "x", data: 1, idempotency_key: "has space" }, /idempotency_key/],
    [{ channel: "x", data: 1, tags: { a: 1 } }, /tags must be an object of strings/],
    [{ channel: "x", data: 1, skip_history: true }, /^skip_history: /],
    [{ channel: "x", data: 1, delta: true }, /^delta: /],
    [{ channel: "x", data: 1, version: 3 }, /^version: /],
  ])("refuses %j", (params, why) => {
    const r = publishParams(params);
    expect(r).toHaveProperty("error");
    expect((r as { error: string }).error).toMatch(why);
  });

  it("broadcast: a bounded list of distinct channels", () => {
    expect(broadcastParams({ channels: ["a:1", "a:2"], data: 1 }, 10)).toMatchObject({ channels: [{ channel: "a.1" }, { channel: "a.2" }] });
    expect(broadcastParams({ channels: [], data: 1 }, 10)).toHaveProperty("error");
    expect(broadcastParams({ channels: ["a:1", "a:2", "a:3"], data: 1 }, 2)).toEqual({ error: "a broadcast names at most 2 channels (this one 3)" });
    expect(broadcastParams({ channels: ["a:1", "a:1"], data: 1 }, 10)).toEqual({ error: "channels must not repeat a channel" });
  });
});

describe("centrifugo request — history, connections, channels", () => {
  it("history: limit 0 is the position alone, a negative limit the most; since and reverse", () => {
    expect(historyParams({ channel: "a:b" }, 1000)).toEqual({ name: "a:b", channel: "a.b", limit: 0, reverse: false });
    expect(historyParams({ channel: "a:b", limit: -1 }, 1000)).toMatchObject({ limit: 1000 });
    expect(historyParams({ channel: "a:b", limit: 5000 }, 1000)).toMatchObject({ limit: 1000 });
    expect(historyParams({ channel: "a:b", limit: 2, reverse: true, since: { offset: 9, epoch: "e" } }, 1000)).toMatchObject({
      reverse: true,
      since: { offset: 9, epoch: "e" },
    });
    expect(historyParams({ channel: "a:b", since: { offset: -1 } }, 1000)).toHaveProperty("error");
    expect(historyParams({ channel: "a:b", limit: 1.5 }, 1000)).toHaveProperty("error");
  });

  it("disconnect: Centrifugo's terminal codes end for good, the others ask to reconnect; one client or session is refused", () => {
    expect(disconnectParams({ user: "u" })).toEqual({ user: "u", reconnect: false, reason: "force disconnect" });
    expect(disconnectParams({ user: "u", disconnect: { code: 3001, reason: "r" } })).toEqual({ user: "u", reconnect: true, reason: "r" });
    expect(disconnectParams({ user: "u", disconnect: { code: 3500 } })).toMatchObject({ reconnect: false });
    expect(disconnectParams({ user: "u", disconnect: { code: 4000 } })).toMatchObject({ reconnect: true });
    expect(disconnectParams({ user: "u", disconnect: { code: 4501 } })).toMatchObject({ reconnect: false });
    expect(disconnectParams({ user: "u", client: "c1" })).toEqual({ error: expect.stringMatching(/^client: /) });
    expect(disconnectParams({ user: "u", whitelist: ["c"] })).toEqual({ error: expect.stringMatching(/^whitelist: /) });
    expect(disconnectParams({ user: "u", whitelist: [] })).toMatchObject({ user: "u" });
    expect(disconnectParams({})).toHaveProperty("error");
    expect(unsubscribeParams({ user: "u", channel: "chat:r" })).toEqual({ user: "u", name: "chat:r", channel: "chat.r" });
    expect(subscribeParams({ user: "u", channel: "chat:r", client: "c1", recover_since: { offset: 4, epoch: "e" }, info: { a: 1 } })).toEqual({
      user: "u",
      name: "chat:r",
      channel: "chat.r",
      client: "c1",
      since: { offset: 4, epoch: "e" },
      info: { a: 1 },
    });
    expect(subscribeParams({ user: "u", channel: "chat:r", session: "s" })).toEqual({ error: expect.stringMatching(/^session: /) });
    expect(subscribeParams({ user: "u", channel: "chat:r", override: { presence: { value: true } } })).toEqual({ error: expect.stringMatching(/^override: /) });
    expect(subscribeParams({ user: "u", channel: "chat:r", recover_since: { offset: -1 } })).toHaveProperty("error");
    expect(refreshParams({ user: "u", expired: true })).toEqual({ user: "u", expired: true });
    expect(refreshParams({ user: "u", session: "s" })).toHaveProperty("error");
  });

  it("channels: Centrifugo's glob syntax on Centrifugo names", () => {
    const m = (p: string) => {
      const f = globMatcher(p);
      if (typeof f !== "function") throw new Error(f.error);
      return f;
    };
    expect(m("")("anything:at.all")).toBe(true);
    expect(m("chat:*")("chat:room.1")).toBe(true);
    expect(m("chat:*")("news:x")).toBe(false);
    expect(m("chat:room?")("chat:room1")).toBe(true);
    expect(m("chat:room?")("chat:room12")).toBe(false);
    expect(m("chat:[ab]1")("chat:b1")).toBe(true);
    expect(m("chat:[!ab]1")("chat:b1")).toBe(false);
    expect(m("{chat,news}:*")("news:x")).toBe(true);
    expect(m("a.b\\*")("a.b*")).toBe(true);
    expect(m("a.b\\*")("a.bc")).toBe(false);
    expect(globMatcher("{a,b")).toEqual({ error: "pattern has { without }" });
    expect(globMatcher("[ab")).toEqual({ error: "pattern has [ without ]" });
  });
});

describe("centrifugo codes — this gateway's errors as Centrifugo's", () => {
  it.each([
    [ErrorCode.Forbidden, ApiCode.PermissionDenied],
    [ErrorCode.FeatureDisabled, ApiCode.NotAvailable],
    [ErrorCode.UnsupportedByBroker, ApiCode.NotAvailable],
    [ErrorCode.BadRequest, ApiCode.BadRequest],
    [ErrorCode.BadChannel, ApiCode.UnknownChannel],
    [ErrorCode.RateLimited, ApiCode.TooManyRequests],
    [ErrorCode.PayloadTooLarge, ApiCode.LimitExceeded],
    [ErrorCode.Unauthorized, ApiCode.Unauthorized],
    [ErrorCode.BrokerUnavailable, ApiCode.Internal],
    [ErrorCode.HookUnavailable, ApiCode.Internal],
  ])("%s → %i", (ours, theirs) => {
    expect(apiErrorOf({ code: ours, message: "m" }).code).toBe(theirs);
  });

  it("a temporary failure keeps its own code in the message (Centrifugo's clients see 100)", () => {
    expect(apiErrorOf({ code: ErrorCode.BrokerUnavailable, message: "broker is not connected; retry" })).toEqual({
      code: 100,
      message: "broker_unavailable: broker is not connected; retry",
    });
  });
});
