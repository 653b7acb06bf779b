// Client RPC (`rpc` op, RPC_HOOK_URL): a real gateway, a real nats-server, a real HTTP backend and real
// WebSocket clients. One gateway's backend answers as each test says (its connect hook grants the methods
// `hooked.*` and an `info`); another's backend is down (a closed port), and it has authentication off; a
// third has no RPC_HOOK_URL and a frame allowance of 2.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { HookBackend } from "#testkit/hook-backend.js";
import { waitFor } from "#testkit/wait.js";
import { closedUrl } from "#testkit/closed-port.js";
import { AUDIENCE, connect, ISSUER, SECRET, sign } from "#testkit/auth.js";
import { verifySignature } from "../src/backend/signature.js";

const TIMEOUT_MS = 600;
const HOOK_SECRET = "rpc-hook-secret-0123456789";
const OLD_HOOK_SECRET = "rpc-hook-secret-before-rotation";
const MAX_IN_FLIGHT = 2;
const MAX_ANSWER = 256 * 1024;
let nats: NatsServerHandle;
let backend: HookBackend;
let gw: GatewayHandle;
let gwDown: GatewayHandle;
let gwNone: GatewayHandle;
const clients = new ClientPool();
const uniq = uniqueNames();
const auth = { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE };

beforeAll(async () => {
  backend = await HookBackend.start();
  nats = await startNatsServer();
  const dir = mkdtempSync(join(tmpdir(), "rpc-test-"));
  writeFileSync(join(dir, "hook-secret"), `${HOOK_SECRET}\n${OLD_HOOK_SECRET}\n`);
  const rpcEnv = { RPC_HOOK_TIMEOUT: `${TIMEOUT_MS}ms`, RPC_MAX_IN_FLIGHT: String(MAX_IN_FLIGHT), HOOK_MAX_ANSWER_BYTES: String(MAX_ANSWER) };
  [gw, gwDown, gwNone] = await Promise.all([
    startGateway({
      natsUrl: nats.url,
      workers: 1,
      env: { ...auth, ...rpcEnv, RPC_HOOK_URL: backend.url("/rpc"), CONNECT_HOOK_URL: backend.url("/connect"), HOOK_SECRET_FILE: join(dir, "hook-secret") },
    }),
    startGateway({ natsUrl: nats.url, workers: 1, env: { ...rpcEnv, RPC_HOOK_URL: closedUrl("/rpc") } }),
    startGateway({ natsUrl: nats.url, workers: 1, env: { FRAME_RATE: "1", FRAME_BURST: "2" } }),
  ]);
});
afterAll(async () => {
  clients.closeAll();
  await Promise.all([gw?.stop(), gwDown?.stop(), gwNone?.stop()]);
  await nats?.stop();
  await backend?.stop();
});

/** A socket of `user` whose token grants the RPC methods `rpc` (no claim at all when null). */
async function socket(g: GatewayHandle, user: string, rpc: string[] | null = ["user.*", "orders.>"]) {
  const token = await sign({ channels: { sub: ["r.>"] }, ...(rpc ? { rpc } : {}) }, { sub: user });
  return clients.track(await connect(g.wsUrl, { headers: { authorization: `Bearer ${token}` } }));
}

const callsBy = (user: string) => backend.callsTo("/rpc", (b) => b.user === user);

/** The backend answers `rpc` calls with `f`; its connect hook admits everyone, granting `hooked.*` and an info. */
function answerRpc(f: HookBackend["answer"]): void {
  backend.answer = (c) => (c.path === "/connect" ? { body: { allow: true, rpc: ["hooked.*"], info: { plan: "gold" } } } : f(c));
}

describe("rpc — answers", () => {
  it("the backend's data is the answer, matched by id; the backend gets method, data and the caller's identity", async () => {
    const user = uniq("ann");
    answerRpc((c) => ({ body: { data: { echo: c.body.data, method: c.body.method } } }));
    const c = await socket(gw, user);
    const r = await c.request({ op: "rpc", method: "user.get", data: { id: 7 } });
    expect(r).toEqual({ op: "ok", id: expect.any(String), data: { echo: { id: 7 }, method: "user.get" } });
    const [call] = callsBy(user);
    expect(call!.body).toEqual({
      method: "user.get",
      data: { id: 7 },
      user,
      client: expect.stringMatching(/^[A-Za-z0-9_-]{16}$/),
      claims: { channels: { sub: ["r.>"], pub: [], auto: [] }, rpc: ["user.*", "orders.>", "hooked.*"], exp: expect.any(Number) },
      ip: expect.stringContaining("127.0.0.1"),
      info: { plan: "gold" },
    });
  });

  it("with HOOK_SECRET_FILE every request (the RPC hook's, the connect hook's) is signed with each secret, as a backend verifies it", async () => {
    const user = uniq("sig");
    answerRpc(() => ({ body: { data: 1 } }));
    const c = await socket(gw, user);
    expect(await c.request({ op: "rpc", method: "user.get", data: { x: "é" } })).toMatchObject({ op: "ok" });
    const connectCall = backend.calls.filter((k) => k.path === "/connect" && k.body.user === user).at(-1)!;
    for (const k of [connectCall, callsBy(user)[0]!]) {
      const header = k.headers["fanout-signature"] as string;
      expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
      expect(verifySignature(header, HOOK_SECRET, k.raw)).toBe(true);
      expect(verifySignature(header, OLD_HOOK_SECRET, k.raw)).toBe(true);
      expect(verifySignature(header, "another secret", k.raw)).toBe(false);
      expect(verifySignature(header, HOOK_SECRET, `${k.raw} `)).toBe(false);
    }
  });

  it("the start log names the hooks set and their signing (the secret file, 2 secrets), never a secret", async () => {
    const line = gw.logs.find((l) => l.msg === "backend hooks");
    expect(line).toMatchObject({
      role: "primary",
      hooks: { rpc: backend.url("/rpc"), connect: backend.url("/connect") },
      signed: { secrets: 2, secretFile: expect.stringMatching(/hook-secret$/) as string },
      rpcTimeoutMs: TIMEOUT_MS,
    });
    expect(gwDown.logs.find((l) => l.msg === "backend hooks")).toMatchObject({ hooks: { rpc: expect.any(String) as string }, signed: false });
    expect(gwNone.logs.some((l) => l.msg === "backend hooks")).toBe(false);
    for (const g of [gw, gwDown]) expect(JSON.stringify(g.logs)).not.toContain(HOOK_SECRET);
  });

  it("an answer without data is data null; a call without data sends data null", async () => {
    const user = uniq("bo");
    answerRpc(() => ({ body: {} }));
    const c = await socket(gw, user);
    expect(await c.request({ op: "rpc", method: "orders.eu.list" })).toMatchObject({ op: "ok", data: null });
    expect(callsBy(user)[0]!.body).toMatchObject({ method: "orders.eu.list", data: null });
  });

  it("calls in flight at once are each answered with their own id, in the order the backend answers", async () => {
    const user = uniq("cy");
    answerRpc((c) => ({ body: { data: c.body.data }, delayMs: (c.body.data as { n: number }).n === 1 ? 300 : 0 }));
    const c = await socket(gw, user);
    const [slow, fast] = await Promise.all([
      c.request({ op: "rpc", method: "user.a", data: { n: 1 } }),
      c.request({ op: "rpc", method: "user.b", data: { n: 2 } }),
    ]);
    expect(slow).toMatchObject({ op: "ok", data: { n: 1 } });
    expect(fast).toMatchObject({ op: "ok", data: { n: 2 } });
    const order = c.frames.filter((f) => f.op === "ok").map((f) => (f.data as { n: number }).n);
    expect(order).toEqual([2, 1]);
  });
});

describe("rpc — errors", () => {
  it("a backend error is rpc_error with the backend's message, appCode and temporary", async () => {
    const c = await socket(gw, uniq("dee"));
    answerRpc(() => ({ body: { error: { code: "not_found", message: "no such user" } } }));
    expect(await c.request({ op: "rpc", method: "user.get", data: 1 })).toMatchObject({
      op: "err",
      code: "rpc_error",
      appCode: "not_found",
      message: "no such user",
      temporary: false,
    });
    answerRpc(() => ({ body: { error: { code: 503, message: "busy", temporary: true } } }));
    expect(await c.request({ op: "rpc", method: "user.get" })).toMatchObject({ code: "rpc_error", appCode: "503", temporary: true });
    answerRpc(() => ({ body: { error: {} } }));
    const bare = await c.request({ op: "rpc", method: "user.get" });
    expect(bare).toMatchObject({ code: "rpc_error", temporary: false, message: expect.stringContaining("error") });
    expect(bare).not.toHaveProperty("appCode");
  });

  it("a backend answering a non-2xx status or no JSON object fails closed: hook_unavailable, temporary", async () => {
    const c = await socket(gw, uniq("eve"));
    answerRpc(() => ({ status: 500, body: { data: "never shown" } }));
    expect(await c.request({ op: "rpc", method: "user.get" })).toMatchObject({ op: "err", code: "hook_unavailable", temporary: true });
    answerRpc(() => ({ body: [1, 2] }));
    expect(await c.request({ op: "rpc", method: "user.get" })).toMatchObject({ code: "hook_unavailable", message: expect.stringContaining("no JSON object") });
  });

  it("an answer larger than MAX_PAYLOAD_BYTES is not sent: hook_unavailable, not temporary", async () => {
    const c = await socket(gw, uniq("big"));
    answerRpc(() => ({ body: { data: "x".repeat(70 * 1024) } }));
    expect(await c.request({ op: "rpc", method: "user.big" })).toMatchObject({
      op: "err",
      code: "hook_unavailable",
      temporary: false,
      message: expect.stringContaining("MAX_PAYLOAD_BYTES"),
    });
    answerRpc(() => ({ body: { data: "x".repeat(60 * 1024) } }));
    expect(await c.request({ op: "rpc", method: "user.big" })).toMatchObject({ op: "ok" });
  });

  it("an endless answer is cut at HOOK_MAX_ANSWER_BYTES: hook_unavailable, not temporary; the backend's connection closes early", async () => {
    const c = await socket(gw, uniq("flood"));
    const before = backend.streamEnds.length;
    const bound = 512 * 1024 * 1024;
    answerRpc(() => ({ endless: bound }));
    expect(await c.request({ op: "rpc", method: "user.flood" })).toMatchObject({
      op: "err",
      code: "hook_unavailable",
      temporary: false,
      message: `the rpc hook answered more than ${MAX_ANSWER} bytes (HOOK_MAX_ANSWER_BYTES)`,
    });
    const end = await waitFor(() => backend.streamEnds[before], { what: "the backend's connection to close" });
    // Written before the close: the cap plus what the sockets' buffers took, nowhere near the body.
    expect(end.finished).toBe(false);
    expect(end.written).toBeLessThan(bound / 8);
    answerRpc(() => ({ body: { data: "fine" } }));
    expect(await c.request({ op: "rpc", method: "user.get" })).toMatchObject({ op: "ok", data: "fine" });
  });

  it("a backend that is down: hook_unavailable, temporary (authentication off: any method passes the permission)", async () => {
    const c = clients.track(await connect(gwDown.wsUrl));
    const f = await c.request({ op: "rpc", method: "any.thing.at.all" });
    expect(f).toMatchObject({ op: "err", code: "hook_unavailable", temporary: true });
    // The client learns that the backend is unreachable, not why (the gateway's log says ECONNREFUSED).
    expect(f.message).toBe("the rpc hook is unreachable; retry later");
  });

  it("a backend that answers after RPC_HOOK_TIMEOUT: hook_unavailable, temporary; the connection goes on", async () => {
    const c = await socket(gw, uniq("gus"));
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    answerRpc(() => ({ body: { data: "late" }, hold }));
    const started = Date.now();
    const r = await c.request({ op: "rpc", method: "user.slow" });
    release();
    expect(r).toMatchObject({ op: "err", code: "hook_unavailable", temporary: true, message: expect.stringContaining(`${TIMEOUT_MS} ms`) });
    expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    answerRpc(() => ({ body: { data: "fine" } }));
    expect(await c.request({ op: "rpc", method: "user.get" })).toMatchObject({ op: "ok", data: "fine" });
  });

  it("without RPC_HOOK_URL: rpc_unavailable, not temporary", async () => {
    const c = clients.track(await connect(gwNone.wsUrl));
    expect(await c.request({ op: "rpc", method: "user.get" })).toMatchObject({ op: "err", code: "rpc_unavailable", temporary: false });
  });

  it("rpc frames spend the connection's FRAME_RATE allowance like any other frame", async () => {
    const c = clients.track(await connect(gwNone.wsUrl));
    for (let i = 0; i < 3; i++) c.sendRaw(JSON.stringify({ op: "rpc", id: `f${i}`, method: "user.get" }));
    const answers = await waitFor(() => (c.frames.length >= 3 ? c.frames : undefined));
    expect(answers.map((f) => f.code)).toEqual(["rpc_unavailable", "rpc_unavailable", "rate_limited"]);
    expect(answers[2]!.message).toMatch(/frames\/s/);
  });

  it("bad frames: no id, no method, a method with a wildcard or an empty token are bad_request; the backend is not asked", async () => {
    const user = uniq("hal");
    const c = await socket(gw, user);
    c.sendRaw(JSON.stringify({ op: "rpc", method: "user.get" }));
    const noId = await waitFor(() => c.frames.find((f) => f.op === "err" && f.id === undefined));
    expect(noId).toMatchObject({ code: "bad_request", message: expect.stringContaining("id") });
    expect(await c.request({ op: "rpc" })).toMatchObject({ op: "err", code: "bad_request", message: "method is missing" });
    expect(await c.request({ op: "rpc", method: "user.*" })).toMatchObject({ code: "bad_request", message: expect.stringContaining("wildcards") });
    expect(await c.request({ op: "rpc", method: "user..get" })).toMatchObject({ code: "bad_request", message: expect.stringContaining("empty token") });
    expect(await c.request({ op: "rpc", method: 5 })).toMatchObject({ code: "bad_request" });
    expect(callsBy(user)).toHaveLength(0);
  });
});

describe("rpc — authorization and limits", () => {
  it("a method neither the token's rpc claim nor the connect hook grants is forbidden before the backend is asked", async () => {
    answerRpc(() => ({ body: { data: "answered when allowed" } }));
    const user = uniq("ida");
    const c = await socket(gw, user);
    expect(await c.request({ op: "rpc", method: "admin.drop" })).toMatchObject({ op: "err", code: "forbidden", temporary: false });
    expect(await c.request({ op: "rpc", method: "user.get.deep" })).toMatchObject({ code: "forbidden" }); // user.* is one token
    const none = uniq("jo");
    const d = await socket(gw, none, null);
    expect(await d.request({ op: "rpc", method: "user.get" })).toMatchObject({ code: "forbidden", message: expect.stringContaining("user.get") });
    expect([...callsBy(user), ...callsBy(none)]).toHaveLength(0);
    // what the connect hook granted (`hooked.*`) is callable without the claim
    expect(await d.request({ op: "rpc", method: "hooked.x" })).toMatchObject({ op: "ok", data: "answered when allowed" });
    expect(callsBy(none)).toMatchObject([{ body: { method: "hooked.x", claims: { rpc: ["hooked.*"] } } }]);
  });

  it("a token with a malformed rpc claim is refused at the upgrade", async () => {
    const token = await sign({ rpc: ["ok", "bad..name"] }, { sub: uniq("kim") });
    await expect(connect(gw.wsUrl, { headers: { authorization: `Bearer ${token}` } })).rejects.toThrow(/401.*rpc/);
  });

  it("a refresh that drops a method's grant forbids the next call of it", async () => {
    answerRpc(() => ({ body: { data: 1 } }));
    const user = uniq("lee");
    const c = await socket(gw, user, ["user.*"]);
    expect(await c.request({ op: "rpc", method: "user.get" })).toMatchObject({ op: "ok" });
    const token = await sign({ channels: { sub: ["r.>"] }, rpc: ["orders.>"] }, { sub: user });
    expect(await c.request({ op: "refresh", token })).toMatchObject({ op: "ok" });
    expect(await c.request({ op: "rpc", method: "user.get" })).toMatchObject({ code: "forbidden" });
    expect(await c.request({ op: "rpc", method: "orders.list" })).toMatchObject({ op: "ok" });
  });

  it(`more than RPC_MAX_IN_FLIGHT (${MAX_IN_FLIGHT}) unanswered calls: the next is rate_limited, temporary, the backend not asked`, async () => {
    const user = uniq("max");
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    answerRpc(() => ({ body: { data: "held" }, hold }));
    const c = await socket(gw, user);
    const held = [c.request({ op: "rpc", method: "user.a" }), c.request({ op: "rpc", method: "user.b" })];
    await waitFor(() => callsBy(user).length === MAX_IN_FLIGHT || undefined);
    expect(await c.request({ op: "rpc", method: "user.c" })).toMatchObject({ op: "err", code: "rate_limited", temporary: true });
    release();
    for (const r of await Promise.all(held)) expect(r).toMatchObject({ op: "ok", data: "held" });
    expect(callsBy(user)).toHaveLength(MAX_IN_FLIGHT);
    // answered: the slots are free again
    answerRpc(() => ({ body: { data: "again" } }));
    expect(await c.request({ op: "rpc", method: "user.c" })).toMatchObject({ op: "ok", data: "again" });
  });
});
