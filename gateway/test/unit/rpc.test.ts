// Client RPC's pure parts in process: the `rpc` frame's parsing, the method permission (the `rpc` claim, the
// connect hook's grant, the chain), the backend's answer read into data or an error, and the error frame.
import { describe, expect, it } from "vitest";
import { AccessControl, anonymousIdentity, type Identity } from "../../src/auth/access.js";
import { Authenticator } from "../../src/auth/authenticator.js";
import { applyGrant } from "../../src/auth/hooks.js";
import { ALLOW_ALL, canCall, parseRpcClaim } from "../../src/auth/permissions.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";
import { GatewayError } from "../../src/errors.js";
import { ErrorCode } from "../../src/protocol/codes.js";
import { parseClientFrame } from "../../src/protocol/frames.js";
import { jsonFrame } from "../../src/protocol/serialize.js";

/** The `err` answer to an `rpc` the backend refused, as fanout.v1 writes it. */
const rpcErrFrame = (id: string | number, message: string, temporary: boolean, appCode: string | undefined): string =>
  jsonFrame({ op: "err", id, code: ErrorCode.RpcError, message, temporary, ...(appCode !== undefined ? { appCode } : {}) });
import { readRpcAnswer, RpcError } from "../../src/rpc/hook.js";

describe("rpc — frames", () => {
  it("rpc — a frame with id, method and data parses; data defaults to null", () => {
    expect(parseClientFrame('{"op":"rpc","id":1,"method":"user.get","data":{"x":[1]}}')).toEqual({
      ok: true,
      frame: { op: "rpc", id: 1, method: "user.get", data: { x: [1] } },
    });
    expect(parseClientFrame('{"op":"rpc","id":"a","method":"ping"}')).toMatchObject({ ok: true, frame: { data: null } });
  });

  it("rpc — no id, no method, or a method that is not a concrete name is bad_request (with the id when there is one)", () => {
    expect(parseClientFrame('{"op":"rpc","method":"a"}')).toEqual({ ok: false, code: ErrorCode.BadRequest, message: "rpc needs an id: its answer carries it" });
    expect(parseClientFrame('{"op":"rpc","id":2}')).toEqual({ ok: false, id: 2, code: ErrorCode.BadRequest, message: "method is missing" });
    for (const m of ['"a.*"', '"a.>"', '""', '"a..b"', "7", '"a b"', '"$sys"'])
      expect(parseClientFrame(`{"op":"rpc","id":3,"method":${m}}`)).toMatchObject({ ok: false, id: 3, code: ErrorCode.BadRequest, message: /^bad method: / });
    expect(parseClientFrame('{"op":"rpc","id":3,"method":"a.*"}')).toMatchObject({ message: "bad method: wildcards are not allowed here" });
  });
});

describe("rpc — the method permission", () => {
  it("rpc — the claim is a list of method patterns; missing is none; malformed is an error message", () => {
    expect(parseRpcClaim(undefined)).toEqual([]);
    expect(parseRpcClaim(["user.*", "admin.>", "user.*"])).toEqual(["user.*", "admin.>"]);
    expect(parseRpcClaim("user.*")).toMatch(/list of at most 1000/);
    expect(parseRpcClaim(["ok", "bad..x"])).toMatch(/bad method pattern "bad..x": the name has an empty token/);
    expect(parseRpcClaim(new Array(1_001).fill("a"))).toMatch(/at most 1000/);
  });

  it("rpc — methods match as channels do: * one token, > one or more; no claim allows nothing; auth off allows all", () => {
    const perms = { sub: [], pub: [], rpc: ["user.*", "admin.>"] };
    expect(canCall(perms, "user.get")).toBe(true);
    expect(canCall(perms, "user.get.x")).toBe(false);
    expect(canCall(perms, "admin")).toBe(false);
    expect(canCall(perms, "admin.a.b")).toBe(true);
    expect(canCall({ sub: [">"], pub: [">"] }, "user.get")).toBe(false);
    expect(canCall(ALLOW_ALL, "any.thing")).toBe(true);
  });

  it("rpc — a connect hook's grant adds methods to the token's; a grant without rpc keeps the token's", () => {
    const p = { user: "u", perms: { sub: ["a"], pub: [], rpc: ["user.get"] } };
    expect(applyGrant(p, true, { sub: [], pub: [], auto: [], rpc: ["orders.*"] }).perms.rpc).toEqual(["user.get", "orders.*"]);
    expect(applyGrant(p, true, { sub: [], pub: [], auto: [] }).perms.rpc).toEqual(["user.get"]);
    expect(applyGrant({ user: "u", perms: { sub: [], pub: [] } }, true, { sub: [], pub: [], auto: [] }).perms).not.toHaveProperty("rpc");
  });

  it("rpc — the chain: a method granted passes, another is forbidden, an API key calls none, anonymous (auth off) calls any", async () => {
    const access = new AccessControl(new Authenticator(sectionsOf(loadConfig([], {}).config).auth));
    const id: Identity = { principal: { user: "u", perms: { sub: [], pub: [], rpc: ["user.*"] } }, ip: "::1", identified: true, trusted: false };
    await expect(access.authorize(id, { right: "rpc", method: "user.get" })).resolves.toBeUndefined();
    const denied = await access.authorize(id, { right: "rpc", method: "orders.get" }).catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(GatewayError);
    expect(denied).toMatchObject({ code: ErrorCode.Forbidden, message: "no permission to call orders.get" });
    const key: Identity = { principal: { user: "api-key", perms: ALLOW_ALL, scopes: ["admin"] }, ip: "::1", identified: true, trusted: true };
    await expect(access.authorize(key, { right: "rpc", method: "user.get" })).rejects.toMatchObject({ code: ErrorCode.Forbidden });
    await expect(access.authorize(anonymousIdentity("::1"), { right: "rpc", method: "any.thing" })).resolves.toBeUndefined();
  });
});

describe("rpc — the backend's answer", () => {
  const answered = (body: unknown, status = 200) => ({
    status,
    ok: status >= 200 && status < 300,
    text: typeof body === "string" ? body : JSON.stringify(body),
  });
  const error = (f: () => unknown): unknown => {
    try {
      f();
    } catch (e) {
      return e;
    }
    throw new Error("did not throw");
  };

  it("rpc — {data} is the answer; no data is null; data beside a null error is the answer", () => {
    expect(readRpcAnswer(answered({ data: { a: 1 } }))).toEqual({ data: { a: 1 } });
    expect(readRpcAnswer(answered({}))).toEqual({ data: null });
    expect(readRpcAnswer(answered({ data: [1], error: null }))).toEqual({ data: [1] });
  });

  it("rpc — {error} is an RpcError: its message, code (a number as a string) and temporary (false unless true)", () => {
    const e = error(() => readRpcAnswer(answered({ error: { code: "not_found", message: "no such user" } })));
    expect(e).toBeInstanceOf(RpcError);
    expect(e).toMatchObject({ code: ErrorCode.RpcError, appCode: "not_found", message: "no such user", temporary: false });
    expect(error(() => readRpcAnswer(answered({ error: { code: 42, temporary: true } })))).toMatchObject({
      appCode: "42",
      temporary: true,
      message: "the application answered with an error (42)",
    });
    expect(error(() => readRpcAnswer(answered({ error: { temporary: "yes" } })))).toMatchObject({ appCode: undefined, temporary: false });
    expect((error(() => readRpcAnswer(answered({ error: { code: "x".repeat(100), message: "m".repeat(5_000) } }))) as RpcError).appCode).toHaveLength(64);
  });

  it("rpc — a failed call, a non-2xx status, no JSON object or an error that is not an object fail closed: hook_unavailable, temporary", () => {
    const cases = [
      { status: 0 as const, ok: false as const, failed: "timeout" as const, why: "did not answer within 5 ms", cause: undefined },
      answered({ data: 1 }, 500),
      answered("not json"),
      answered([1]),
      answered("null"),
      answered({ error: "boom" }),
      answered({ error: [1] }),
    ];
    for (const c of cases) {
      const e = error(() => readRpcAnswer(c));
      expect(e).not.toBeInstanceOf(RpcError);
      expect(e).toMatchObject({ code: ErrorCode.HookUnavailable, temporary: true });
    }
  });

  it("rpc — an answer longer than HOOK_MAX_ANSWER_BYTES is hook_unavailable, not temporary: the backend would answer the same again", () => {
    const tooLarge = { status: 200, ok: false as const, failed: "too_large" as const, why: "answered more than 1024 bytes", cause: undefined };
    expect(error(() => readRpcAnswer(tooLarge))).toMatchObject({
      code: ErrorCode.HookUnavailable,
      temporary: false,
      message: "the rpc hook answered more than 1024 bytes (HOOK_MAX_ANSWER_BYTES)",
    });
  });

  it("rpc — the error frame carries the code rpc_error and the backend's appCode when it gave one", () => {
    expect(JSON.parse(rpcErrFrame(7, "no such user", false, "not_found"))).toEqual({
      op: "err",
      id: 7,
      code: "rpc_error",
      message: "no such user",
      temporary: false,
      appCode: "not_found",
    });
    expect(JSON.parse(rpcErrFrame("x", 'a "quoted" message', true, undefined))).toEqual({
      op: "err",
      id: "x",
      code: "rpc_error",
      message: 'a "quoted" message',
      temporary: true,
    });
  });
});
