// Centrifugo's proxy format in process: settings, how an answer is read (result, error, disconnect, malformed),
// the error-code mapping, what connect and subscribe results grant, the request bodies, and the RPC answer.
import { describe, expect, it } from "vitest";
import { dataOf, expireAtOf, HookDisconnect, proxyRefusal, readProxyAnswer, readRefreshResult } from "../../src/backend/proxy-format.js";
import { publishBody, readConnectResult, readSubscribeResult, resultOf, rpcBody, subscribeBody, type ProxyWho } from "../../src/auth/centrifugo-hooks.js";
import { applyGrant } from "../../src/auth/hooks.js";
import { readCentrifugoRpcAnswer, RpcError } from "../../src/rpc/hook.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";
import { ConfigError, GatewayError } from "../../src/errors.js";
import { ErrorCode } from "../../src/protocol/codes.js";
import type { Principal } from "../../src/auth/principal.js";

const token: Principal = { user: "alice", perms: { sub: ["a.>"], pub: [] }, exp: 2_000 };
const who: ProxyWho = { client: "c1", transport: "websocket", protocol: "msgpack", user: "alice", meta: null };
const ok = (body: unknown) => ({ status: 200, ok: true, text: JSON.stringify(body) });

describe("proxy format — settings", () => {
  it("HOOK_FORMAT sets every hook's format; a hook's own setting overrides it", () => {
    const f = sectionsOf(loadConfig([], { HOOK_FORMAT: "centrifugo", RPC_HOOK_FORMAT: "native" }).config).hooks.formats;
    expect(f).toEqual({
      connect: "centrifugo",
      subscribe: "centrifugo",
      publish: "centrifugo",
      rpc: "native",
      refresh: "centrifugo",
      subRefresh: "centrifugo",
    });
    expect(sectionsOf(loadConfig([], {}).config).hooks.formats.connect).toBe("native");
  });

  it.each([
    ["HOOK_FORMAT", "grpc"],
    ["SUB_REFRESH_HOOK_FORMAT", "Centrifugo"],
    ["REFRESH_HOOK_URL", "ftp://x"],
  ])("a bad %s is refused naming the setting", (setting, value) => {
    expect(() => loadConfig([], { [setting]: value })).toThrow(ConfigError);
    expect(() => loadConfig([], { [setting]: value })).toThrow(`invalid ${setting}`);
  });
});

describe("proxy format — answers", () => {
  it("disconnect first, then error, then result (Centrifugo's order)", () => {
    expect(readProxyAnswer("x", { result: {}, error: { code: 103 }, disconnect: { code: 4500, reason: "r" } })).toEqual({
      kind: "disconnect",
      code: 4500,
      reason: "r",
    });
    expect(readProxyAnswer("x", { result: {}, error: { code: 103, message: "m" } })).toEqual({ kind: "error", code: 103, message: "m", temporary: false });
    expect(readProxyAnswer("x", { result: { a: 1 } })).toEqual({ kind: "result", result: { a: 1 } });
    expect(readProxyAnswer("x", { result: {}, error: null })).toEqual({ kind: "result", result: {} });
  });

  it.each([{}, { allow: true }, { result: [] }, { error: "no" }, { error: { code: "103" } }, { disconnect: { code: 1000 } }, { disconnect: { code: 5000 } }])(
    "malformed: %j is hook_unavailable, never an allow",
    (a) => {
      const e = (() => {
        try {
          readProxyAnswer("connect", a as Record<string, unknown>);
        } catch (err) {
          return err;
        }
      })();
      expect(e).toBeInstanceOf(GatewayError);
      expect((e as GatewayError).code).toBe(ErrorCode.HookUnavailable);
    },
  );

  it("a disconnect reason is cut to 123 bytes on a character boundary", () => {
    const a = readProxyAnswer("x", { disconnect: { code: 4000, reason: "é".repeat(100) } });
    expect(a.kind === "disconnect" && Buffer.byteLength(a.reason)).toBe(122);
  });

  it("error codes map to wire codes; the code is passed on as appCode, temporary as given", () => {
    const map = (code: number, temporary = false) => proxyRefusal("sub", { kind: "error", code, message: "m", temporary });
    expect([101, 102, 103, 106, 107, 108, 109, 111, 100].map((c) => map(c).code)).toEqual([
      "unauthorized",
      "bad_channel",
      "forbidden",
      "rate_limited",
      "bad_request",
      "feature_disabled",
      "unauthorized",
      "rate_limited",
      "hook_unavailable",
    ]);
    const app = map(1001, true);
    expect(app).toMatchObject({ code: "forbidden", appCode: "1001", temporary: true, message: "sub denied by the application: m" });
  });

  it("a disconnect is `disconnected`, temporary in the reconnect ranges (3000–3499, 4000–4499)", () => {
    expect(new HookDisconnect("x", { code: 4000, reason: "" })).toMatchObject({ code: "disconnected", temporary: true, appCode: "4000" });
    expect(new HookDisconnect("x", { code: 4500, reason: "" }).temporary).toBe(false);
    expect(new HookDisconnect("x", { code: 3499, reason: "" }).temporary).toBe(true);
    expect(new HookDisconnect("x", { code: 3500, reason: "" }).temporary).toBe(false);
    expect(() => resultOf("subscribe", "subscription", { disconnect: { code: 4501, reason: "bye" } })).toThrow(HookDisconnect);
  });

  it("data: b64data (decoded) before data; a bad base64 is malformed; expire_at 0 is none", () => {
    expect(dataOf("x", { b64data: "AAEC", data: 1 })).toEqual({ bytes: Buffer.from([0, 1, 2]) });
    expect(dataOf("x", { data: { a: 1 } })).toEqual({ data: { a: 1 } });
    expect(dataOf("x", { data: null })).toEqual({ data: null });
    expect(dataOf("x", {})).toBeUndefined();
    expect(() => dataOf("x", { b64data: "not base64!" })).toThrow(/b64data/);
    expect(expireAtOf("x", { expire_at: 0 })).toBeUndefined();
    expect(expireAtOf("x", { expire_at: 1_700_000_000 })).toBe(1_700_000_000);
    expect(() => expireAtOf("x", { expire_at: "soon" })).toThrow(/expire_at/);
  });

  it("refresh results: expired, a new expiry, or none", () => {
    expect(readRefreshResult("refresh", { expired: true, expire_at: 5 })).toEqual({ expired: true });
    expect(readRefreshResult("refresh", { expire_at: 5 })).toEqual({ expired: false, exp: 5 });
    expect(readRefreshResult("refresh", {})).toEqual({ expired: false, exp: undefined });
    expect(readRefreshResult("refresh", { expire_at: 5, info: { v: 2 } })).toEqual({ expired: false, exp: 5, info: { v: 2 } });
  });
});

describe("proxy format — connect and subscribe results", () => {
  it("connect: channels and subs keys (Centrifugo names, news:x is news.x here) are server-side subscriptions, readable; user, expire_at, meta (else info)", () => {
    const r = readConnectResult(token, { user: "bob", expire_at: 1_000, channels: ["news:x"], subs: { "inbox:alice": {} }, info: { i: 1 }, meta: { m: 1 } });
    expect(r).toEqual({ sub: ["news.x", "inbox.alice"], auto: ["news.x", "inbox.alice"], user: "bob", exp: 1_000, info: { m: 1 } });
    expect(readConnectResult(token, { info: { i: 1 } }).info).toEqual({ i: 1 });
    expect(readConnectResult(token, { user: "" })).toEqual({ sub: [], auto: [] });
    expect(() => readConnectResult(token, { channels: [":x"] })).toThrow(/not a channel here/);
    expect(() => readConnectResult(token, { channels: "news" })).toThrow(/channels must be a list/);
  });

  it("the connection's expiry is the earlier of the token's and the hook's; a token's user stays", () => {
    const g = { sub: [], pub: [], auto: [], user: "bob", exp: 1_000 };
    expect(applyGrant(token, true, g)).toMatchObject({ user: "alice", exp: 1_000 });
    expect(applyGrant(token, true, { ...g, exp: 3_000 }).exp).toBe(2_000);
    expect(applyGrant({ user: "anon", perms: { sub: [], pub: [] } }, false, g)).toMatchObject({ user: "bob", exp: 1_000 });
  });

  it("subscribe: expire_at and data (b64data as its base64 text)", () => {
    expect(readSubscribeResult({ expire_at: 9, data: { a: 1 }, info: "ignored" })).toEqual({ exp: 9, data: { a: 1 } });
    expect(readSubscribeResult({ b64data: "AAEC" })).toEqual({ data: "AAEC" });
    expect(readSubscribeResult({})).toEqual({});
  });
});

describe("proxy format — requests", () => {
  it("every request starts with client, transport, protocol, encoding; meta only when the connect hook gave one", () => {
    expect(subscribeBody(who, "a.b")).toEqual({ client: "c1", transport: "websocket", protocol: "msgpack", encoding: "json", user: "alice", channel: "a:b" });
    expect(rpcBody({ ...who, meta: { plan: 1 } }, "m", undefined)).toEqual({
      client: "c1",
      transport: "websocket",
      protocol: "msgpack",
      encoding: "json",
      user: "alice",
      method: "m",
      data: null,
      meta: { plan: 1 },
    });
  });

  it("publish: a JSON value in data (encoding json), bytes as b64data (encoding binary)", () => {
    expect(publishBody(who, "a.b", { x: 1 }, false)).toMatchObject({ encoding: "json", channel: "a:b", data: { x: 1 } });
    const bin = publishBody(who, "a.b", "AAEC", true);
    expect(bin).toMatchObject({ encoding: "binary", b64data: "AAEC" });
    expect(bin).not.toHaveProperty("data");
  });
});

describe("proxy format — rpc answers", () => {
  it("result data is the answer (none: null; b64data: its base64)", () => {
    expect(readCentrifugoRpcAnswer(ok({ result: { data: { a: 1 } } }))).toEqual({ data: { a: 1 } });
    expect(readCentrifugoRpcAnswer(ok({ result: {} }))).toEqual({ data: null });
    expect(readCentrifugoRpcAnswer(ok({ result: { b64data: "AAEC" } }))).toEqual({ data: "AAEC" });
  });

  it("an error answer is rpc_error with appCode; disconnect is HookDisconnect; no JSON is hook_unavailable", () => {
    expect(() => readCentrifugoRpcAnswer(ok({ error: { code: 1404, message: "no such order", temporary: true } }))).toThrow(RpcError);
    try {
      readCentrifugoRpcAnswer(ok({ error: { code: 1404, message: "no such order", temporary: true } }));
    } catch (e) {
      expect(e).toMatchObject({ code: "rpc_error", appCode: "1404", temporary: true, message: "no such order" });
    }
    expect(() => readCentrifugoRpcAnswer(ok({ disconnect: { code: 4500, reason: "x" } }))).toThrow(HookDisconnect);
    expect(() => readCentrifugoRpcAnswer({ status: 200, ok: true, text: "nope" })).toThrow(/no JSON object/);
    expect(() => readCentrifugoRpcAnswer({ status: 500, ok: false, text: "{}" })).toThrow(/HTTP 500/);
  });
});
