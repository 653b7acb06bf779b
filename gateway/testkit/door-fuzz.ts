// The doors fuzz target: random requests at every door that reads or writes a channel, with random tokens,
// permissions and hook answers, against a real gateway and a real hook backend. The oracle is the WebSocket:
// no door may ever answer more than the WebSocket `sub` (reads) or `pub` (writes) of the same credentials
// answers. The control plane, which no token reaches, must refuse every case. The key cases send random API keys
// (each scope, none, unknown; in a header, as the bearer or in the URL) at the control plane (every operation,
// with random content types and origins), publish and history: a door answers 2xx exactly when the key's scopes
// allow it, and every refusal is a known code. The WebSocket's `rpc` goes through the same chain: each case calls
// one method (valid or not) with random `rpc` claims and backend answers, and it is answered exactly as the claim
// patterns and the answer say (the backend asked only when allowed), then sends one malformed `rpc` frame, which
// must get an error frame on a socket that still answers. Used by gateway/test/fuzz/doors.fuzz.test.ts (a short run) and
// `npm run fuzz -- --doors N`.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { SignJWT } from "jose";
import WebSocket from "ws";
import { HookBackend, type HookCall, type HookAnswer } from "./hook-backend.js";
import { startNatsServer } from "./nats-server.js";
import { startGateway } from "./gateway.js";
import { ErrorCode } from "../src/protocol/codes.js";

export type DoorFuzzTarget = {
  /** http://host:port and ws://host:port of a gateway started with JWT_SECRET, issuer, audience, API_KEYS and both hooks. */
  url: string;
  wsUrl: string;
  /** The admin listener, where the control plane (`/v1/server/…`) is. */
  adminUrl: string;
  hooks: HookBackend;
  secret: string;
  issuer: string;
  audience: string;
  apiKey: string;
  /** Keys of API_KEYS_FILE by their scopes (the admin key of API_KEYS is `apiKey`). */
  scopedKeys: Record<ScopedKey, string>;
};

/** The keys the target has, besides API_KEYS' admin key: one per set of scopes in API_KEYS_FILE. */
const SCOPED_KEYS = {
  admin: "fuzz-scope-admin-0123456789",
  publish: "fuzz-scope-publish-0123456789",
  read: "fuzz-scope-read-0123456789",
  "publish,read": "fuzz-scope-both-0123456789",
} as const;
type ScopedKey = keyof typeof SCOPED_KEYS;

/**
 * The doors target's servers: a nats-server, a hook backend and a gateway (one worker, JWT with issuer and
 * audience, an API key, the connect, subscribe and RPC hooks, no per-IP, frame or publish limits); `stop()` ends
 * them all.
 */
export async function startDoorFuzzTarget(secret: string): Promise<DoorFuzzTarget & { stop(): Promise<void> }> {
  const [issuer, audience, apiKey] = ["https://issuer.fuzz", "fanout-fuzz", "fuzz-doors-api-key-0123456789"];
  const hooks = await HookBackend.start();
  const nats = await startNatsServer();
  const keysFile = join(mkdtempSync(join(tmpdir(), "fgw-fuzz-keys-")), "keys");
  writeFileSync(
    keysFile,
    Object.entries(SCOPED_KEYS)
      .map(([scopes, key]) => `${key} ${scopes}\n`)
      .join(""),
  );
  try {
    const gw = await startGateway({
      natsUrl: nats.url,
      workers: 1,
      env: {
        JWT_SECRET: secret,
        JWT_ISSUER: issuer,
        JWT_AUDIENCE: audience,
        API_KEYS: apiKey,
        API_KEYS_FILE: keysFile,
        CONNECT_HOOK_URL: hooks.url("/connect"),
        SUBSCRIBE_HOOK_URL: hooks.url("/subscribe"),
        RPC_HOOK_URL: hooks.url("/rpc"),
        HOOK_MAX_ANSWER_BYTES: String(RPC_MAX_ANSWER),
        HOOK_CACHE_TTL: "1m",
        FRAME_RATE: "-1",
        CONNECT_RATE_PER_IP: "-1",
        READ_RATE_PER_IP: "-1",
        PUBLISH_RATE: "-1",
      },
    });
    const stop = async () => {
      await gw.stop();
      await nats.stop();
      await hooks.stop();
    };
    return { url: gw.url, wsUrl: gw.wsUrl, adminUrl: gw.metricsUrl, hooks, secret, issuer, audience, apiKey, scopedKeys: SCOPED_KEYS, stop };
  } catch (e) {
    await nats.stop();
    await hooks.stop();
    throw e;
  }
}

const PATTERNS = ["f.a", "f.*", "f.>", "g.>", "g.x"] as const;
const CHANNELS = ["f.a", "f.b", "f.a.b", "g.x", "f.*", "f.>"] as const;
const TOKENS = ["valid", "valid-in-url", "expired", "bad-signature", "none", "garbage", "api-key-in-url"] as const;

/** Method patterns a token's `rpc` claim may list; the connect hook's grant adds GRANTED_RPC. */
const RPC_PATTERNS = ["m.a", "m.*", "m.>", "n.x", ">"] as const;
const GRANTED_RPC = ["n.>"];
/** Methods an `rpc` frame names, and whether the frame parser takes them (else `bad_request`, nothing asked). */
const RPC_METHODS: readonly { method: unknown; valid: boolean }[] = [
  { method: "m.a", valid: true },
  { method: "m.b.c", valid: true },
  { method: "n.x", valid: true },
  { method: "n.y.z", valid: true },
  { method: "o", valid: true },
  { method: "m.*", valid: false },
  { method: "m.>", valid: false },
  { method: "m..a", valid: false },
  { method: "", valid: false },
  { method: 5, valid: false },
  { method: null, valid: false },
  { method: undefined, valid: false },
  { method: `m.${"a".repeat(300)}`, valid: false },
];
/** How the RPC backend answers: data, an application error, HTTP 500, or a body without end (cut at RPC_MAX_ANSWER). */
const RPC_ANSWERS = ["data", "error", "status", "endless"] as const;
const RPC_MAX_ANSWER = 64 * 1024;
/** Malformed `rpc` frames, each of which must get an `err` frame and leave the socket answering. */
const BAD_RPC_FRAMES = [
  '{"op":"rpc","method":"m.a"}',
  '{"op":"rpc","id":{"x":1},"method":"m.a"}',
  '{"op":"rpc","id":"bad","method":["m.a"]}',
  '{"op":"rpc","id":"bad"}',
  `{"op":"rpc","id":"${"i".repeat(5_000)}","method":"m.a"}`,
  '{"op":"rpc","id":"bad","method":"m.a",',
  '["rpc","m.a"]',
] as const;

export type DoorCase = {
  token: (typeof TOKENS)[number];
  sub: string[];
  pub: string[];
  /** The token's `rpc` claim: method patterns, or none at all. */
  rpc: string[] | null;
  connect: "allow" | "deny" | "grant" | "error";
  /** Channels the subscribe hook allows, or an error answer. */
  subscribe: string[] | "error";
  channel: string;
  /** The `rpc` frame's method (and whether it is a valid name), the backend's answer, and a malformed `rpc` frame. */
  call: { method: unknown; valid: boolean };
  rpcAnswer: (typeof RPC_ANSWERS)[number];
  badRpc: (typeof BAD_RPC_FRAMES)[number];
};

export const doorCase: fc.Arbitrary<DoorCase> = fc.record({
  token: fc.constantFrom(...TOKENS),
  sub: fc.subarray([...PATTERNS]),
  pub: fc.subarray([...PATTERNS]),
  connect: fc.constantFrom("allow", "deny", "grant", "error"),
  subscribe: fc.oneof(fc.subarray([...CHANNELS]), fc.constant("error" as const)),
  channel: fc.constantFrom(...CHANNELS),
  rpc: fc.option(fc.subarray([...RPC_PATTERNS]), { nil: null }),
  call: fc.constantFrom(...RPC_METHODS),
  rpcAnswer: fc.constantFrom(...RPC_ANSWERS),
  badRpc: fc.constantFrom(...BAD_RPC_FRAMES),
});

/** Door cases whose WebSocket opens (a valid token, the connect hook allowing): each reaches the `rpc` checks. */
export const rpcDoorCase: fc.Arbitrary<DoorCase> = doorCase.chain((c) =>
  fc
    .record({ token: fc.constantFrom("valid" as const, "valid-in-url" as const), connect: fc.constantFrom("allow" as const, "grant" as const) })
    .map((o) => ({ ...c, ...o })),
);

/** What one case got at each door: a status (HTTP), or whether the WebSocket frame was answered ok. */
export type DoorResult = {
  upgrade: number;
  wsSub: boolean;
  wsPub: boolean;
  wsPresence: boolean;
  /** The `rpc` frame's answer: `ok`, or its error code; and how often the backend was asked about it. */
  rpc?: string;
  rpcAsked?: number;
  /** The error codes the malformed `rpc` frame got, and whether a `ping` after it was answered. */
  badRpc?: string[];
  aliveAfterBadRpc?: boolean;
  sse: number;
  history: number;
  lastValues: number;
  presence: number;
  publish: number;
  /** The control plane (`GET /v1/server/occupancy`): only an API key in a header may pass, and no case sends one there. */
  control: number;
};

let users = 0;

/** Runs one case: the WebSocket first (the oracle), then every HTTP door. Throws on a violation. */
export async function runDoorCase(t: DoorFuzzTarget, c: DoorCase): Promise<DoorResult> {
  const user = `fz${process.pid}x${++users}`; // a fresh user: no hook answer of another case applies
  t.hooks.answer = (call) => hookAnswer(call, user, c);
  const token = await tokenFor(t, c, user);
  const inUrl = c.token === "valid-in-url" || c.token === "api-key-in-url";
  const auth: Record<string, string> = token !== undefined && !inUrl ? { authorization: `Bearer ${token}` } : {};
  const q = token !== undefined && inUrl ? `?token=${encodeURIComponent(token)}` : "";
  const ch = encodeURIComponent(c.channel);

  const ws = await openWs(`${t.wsUrl}${q}`, auth);
  const r: DoorResult = {
    upgrade: ws.status,
    wsSub: false,
    wsPub: false,
    wsPresence: false,
    sse: 0,
    history: 0,
    lastValues: 0,
    presence: 0,
    publish: 0,
    control: 0,
  };
  if (ws.socket) {
    r.wsSub = (await ws.request({ op: "sub", channel: c.channel })).op === "ok";
    r.wsPresence = (await ws.request({ op: "presence", channel: c.channel })).op === "presence";
    r.wsPub = (await ws.request({ op: "pub", channel: c.channel, data: { fuzz: true } })).op === "ok";
    const rpc = await ws.request({ op: "rpc", method: c.call.method, data: { fuzz: true } });
    r.rpc = rpc.op === "ok" ? "ok" : String(rpc.code);
    if (rpc.op === "ok" && JSON.stringify(rpc.data) !== JSON.stringify({ echo: c.call.method, user })) r.rpc = "ok with another call's data";
    r.rpcAsked = t.hooks.callsTo("/rpc", (b) => b.user === user).length;
    const mark = ws.frames.length;
    ws.socket.send(c.badRpc);
    r.aliveAfterBadRpc = (await ws.request({ op: "ping" })).op === "pong";
    r.badRpc = ws.frames.slice(mark).flatMap((f) => (f.op === "err" ? [String(f.code)] : []));
    ws.socket.close();
  }
  const get = async (path: string, accept?: string) => {
    const res = await fetch(`${t.url}${path}`, { headers: { ...auth, ...(accept ? { accept } : {}) }, signal: AbortSignal.timeout(10_000) });
    await res.body?.cancel();
    return res.status;
  };
  r.sse = await get(`/v1/channels/${ch}/events${q}`, "text/event-stream");
  r.history = await get(`/v1/channels/${ch}/messages${q}`);
  r.lastValues = await get(`/v1/channels/${ch}/messages?last_per_subject=1${q ? `&${q.slice(1)}` : ""}`);
  r.presence = await get(`/v1/channels/${ch}/presence${q}`);
  const pub = await fetch(`${t.url}/v1/publish/${ch}${q}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...auth },
    body: '{"fuzz":true}',
    signal: AbortSignal.timeout(10_000),
  });
  await pub.body?.cancel();
  r.publish = pub.status;
  const control = await fetch(`${t.adminUrl}/v1/server/occupancy?channel=f.a`, { headers: auth, signal: AbortSignal.timeout(10_000) });
  await control.body?.cancel();
  r.control = control.status;
  check(c, r);
  return r;
}

const ok = (status: number) => status >= 200 && status < 300;

function check(c: DoorCase, r: DoorResult): void {
  const fail = (what: string): never => {
    throw new Error(`${what}\ncase: ${JSON.stringify(c)}\nresult: ${JSON.stringify(r)}`);
  };
  for (const door of ["sse", "history", "lastValues", "presence"] as const)
    if (ok(r[door]) && !r.wsSub) fail(`${door} answered ${r[door]} where the WebSocket sub was refused`);
  if (r.wsPresence && !r.wsSub) fail("the WebSocket presence op answered where sub was refused");
  if (ok(r.publish) && !r.wsPub) fail(`HTTP publish answered ${r.publish} where the WebSocket pub was refused`);
  // No token, connect-hook grant or URL credential reaches the control plane: only an API key in a header does.
  if (![401, 403, 503].includes(r.control)) fail(`the control plane answered ${r.control} without an API key (401, 403 or a hook's 503 expected)`);
  for (const door of ["upgrade", "sse", "history", "lastValues", "presence", "publish", "control"] as const)
    if (r[door] === 500) fail(`${door} answered 500 (internal error)`);
  if (r.upgrade === 101) checkRpc(c, r, fail);
}

/** The `rpc` answer the case's claims and backend answer call for, from first principles (not the gateway's matcher). */
function expectedRpc(c: DoorCase): string {
  if (!c.call.valid) return ErrorCode.BadRequest;
  const patterns = [...(c.rpc ?? []), ...(c.connect === "grant" ? GRANTED_RPC : [])];
  if (!patterns.some((p) => methodMatches(p, String(c.call.method)))) return ErrorCode.Forbidden;
  return { data: "ok", error: ErrorCode.RpcError, status: ErrorCode.HookUnavailable, endless: ErrorCode.HookUnavailable }[c.rpcAnswer];
}

function checkRpc(c: DoorCase, r: DoorResult, fail: (what: string) => never): void {
  const want = expectedRpc(c);
  if (r.rpc !== want) fail(`rpc answered ${r.rpc}, the claims and the backend's answer call for ${want}`);
  const asked = want === ErrorCode.BadRequest || want === ErrorCode.Forbidden ? 0 : 1;
  if (r.rpcAsked !== asked) fail(`the rpc backend was asked ${r.rpcAsked} times, ${asked} expected (only after the chain allowed the method)`);
  if (!r.aliveAfterBadRpc) fail("the socket did not answer a ping after a malformed rpc frame");
  if (r.badRpc?.length !== 1 || !CODES.has(r.badRpc[0]!))
    fail(`a malformed rpc frame got ${JSON.stringify(r.badRpc)}, one err frame with a known code expected`);
}

/** A method pattern as a token's `rpc` claim means it: dot-separated tokens, `*` one token, `>` one or more at the end. */
function methodMatches(pattern: string, method: string): boolean {
  const p = pattern.split(".");
  const m = method.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return m.length > i;
    if (i >= m.length || (p[i] !== "*" && p[i] !== m[i])) return false;
  }
  return p.length === m.length;
}

function hookAnswer(call: HookCall, user: string, c: DoorCase): HookAnswer {
  const mine = call.body.user === user || (call.body.user === null && c.token === "none");
  if (!mine) return { body: { allow: false, reason: "another case's user" } };
  if (call.path === "/connect") {
    if (c.connect === "error") return { status: 500, body: {} };
    if (c.connect === "deny") return { body: { allow: false, reason: "fuzz deny" } };
    return { body: c.connect === "grant" ? { allow: true, channels: { sub: ["g.>"], pub: ["g.x"] }, rpc: GRANTED_RPC } : { allow: true } };
  }
  if (call.path === "/rpc") {
    if (c.rpcAnswer === "status") return { status: 500, body: { data: "never shown" } };
    if (c.rpcAnswer === "endless") return { endless: RPC_MAX_ANSWER * 64 };
    if (c.rpcAnswer === "error") return { body: { error: { code: "fz", message: "fuzz error" } } };
    return { body: { data: { echo: call.body.method, user } } };
  }
  if (c.subscribe === "error") return { status: 503, body: {} };
  return { body: { allow: c.subscribe.includes(String(call.body.channel)), reason: "fuzz" } };
}

async function tokenFor(t: DoorFuzzTarget, c: DoorCase, user: string): Promise<string | undefined> {
  if (c.token === "none") return undefined;
  if (c.token === "garbage") return "not.a.token";
  if (c.token === "api-key-in-url") return t.apiKey;
  const key = new TextEncoder().encode(c.token === "bad-signature" ? `${t.secret}-other` : t.secret);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ channels: { sub: c.sub, pub: c.pub }, ...(c.rpc ? { rpc: c.rpc } : {}) })
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(user)
    .setIssuer(t.issuer)
    .setAudience(t.audience)
    .setIssuedAt(now - 3600)
    .setExpirationTime(c.token === "expired" ? now - 600 : now + 600)
    .sign(key);
}

type Frame = { op: string; id?: unknown; code?: unknown; data?: unknown };
/** An opened socket (status 101) or the upgrade's refusal; `frames` holds every frame it received, in order. */
type Ws = { status: number; socket?: WebSocket; frames: Frame[]; request: (f: Record<string, unknown>) => Promise<Frame> };

async function openWs(url: string, headers: Record<string, string>): Promise<Ws> {
  const socket = new WebSocket(url, { headers });
  const replies = new Map<string, (f: Frame) => void>();
  const frames: Frame[] = [];
  let next = 0;
  socket.on("message", (d: Buffer) => {
    const f = JSON.parse(d.toString()) as Frame;
    frames.push(f);
    if (typeof f.id === "string") replies.get(f.id)?.(f);
  });
  const request = (f: Record<string, unknown>) =>
    new Promise<Frame>((resolve, reject) => {
      const id = `z${++next}`;
      const timer = setTimeout(() => reject(new Error(`no reply to ${JSON.stringify(f)}`)), 10_000);
      replies.set(id, (reply) => {
        clearTimeout(timer);
        resolve(reply);
      });
      socket.send(JSON.stringify({ ...f, id }));
    });
  return new Promise((resolve, reject) => {
    socket.once("open", () => resolve({ status: 101, socket, frames, request }));
    socket.once("unexpected-response", (_req, res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, frames, request });
    });
    socket.once("error", reject);
  });
}

const KEYS = ["api-keys", "admin", "publish", "read", "publish,read", "unknown", "none"] as const;
const OPS = ["occupancy", "users", "disconnect", "unsubscribe", "broadcast", "nope"] as const;

/** An API key case: a key (by its scopes), how it is sent, and a control request with a content type and an origin. */
export type KeyCase = {
  key: (typeof KEYS)[number];
  via: "header" | "bearer" | "url";
  op: (typeof OPS)[number];
  media: "application/json" | "application/json; charset=utf-8" | "text/plain" | "application/x-www-form-urlencoded" | "";
  origin: "" | "https://evil.example" | "null";
  channel: string;
};

export const keyCase: fc.Arbitrary<KeyCase> = fc.record({
  key: fc.constantFrom(...KEYS),
  via: fc.constantFrom("header", "bearer", "url"),
  op: fc.constantFrom(...OPS),
  media: fc.constantFrom("application/json", "application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", ""),
  origin: fc.constantFrom("", "https://evil.example", "null"),
  channel: fc.constantFrom(...CHANNELS.filter((c) => !c.includes("*") && !c.includes(">"))),
});

export type KeyResult = { control: number; controlError?: string; publish: number; history: number };

const CODES = new Set<string>(Object.values(ErrorCode));
const scopesOf = (k: KeyCase["key"]): string[] => (k === "api-keys" ? ["admin"] : k === "unknown" || k === "none" ? [] : k.split(","));

/** Runs one key case at the control plane, publish and history. Throws on a violation. */
export async function runKeyCase(t: DoorFuzzTarget, k: KeyCase): Promise<KeyResult> {
  const key = k.key === "api-keys" ? t.apiKey : k.key === "unknown" ? "fuzz-unknown-key-0123456789" : k.key === "none" ? undefined : t.scopedKeys[k.key];
  const inHeader: Record<string, string> =
    key === undefined || k.via === "url" ? {} : k.via === "header" ? { "x-api-key": key } : { authorization: `Bearer ${key}` };
  const q = key !== undefined && k.via === "url" ? `?token=${encodeURIComponent(key)}` : "";
  const post = k.op !== "occupancy" && k.op !== "users";
  const path = k.op === "occupancy" ? `occupancy?channel=${k.channel}` : k.op === "users" ? "users/nobody-fuzz" : k.op;
  const body = { user: "nobody-fuzz", reconnect: true, channel: k.channel, channels: [k.channel], data: { fuzz: true } };
  const headers = { ...inHeader, ...(k.media ? { "content-type": k.media } : {}), ...(k.origin ? { origin: k.origin } : {}) };
  const control = await fetch(`${t.adminUrl}/v1/server/${path}${q}`, {
    method: post ? "POST" : "GET",
    headers,
    ...(post ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(10_000),
  });
  const answer = (await control.json()) as { error?: string };
  const json = { ...inHeader, "content-type": "application/json" };
  const pub = await fetch(`${t.url}/v1/publish/${k.channel}${q}`, { method: "POST", headers: json, body: "{}", signal: AbortSignal.timeout(10_000) });
  await pub.body?.cancel();
  const hist = await fetch(`${t.url}/v1/channels/${k.channel}/messages${q}`, { headers: inHeader, signal: AbortSignal.timeout(10_000) });
  await hist.body?.cancel();
  const r: KeyResult = {
    control: control.status,
    ...(answer.error !== undefined ? { controlError: answer.error } : {}),
    publish: pub.status,
    history: hist.status,
  };
  checkKey(k, r);
  return r;
}

function checkKey(k: KeyCase, r: KeyResult): void {
  const fail = (what: string) => {
    throw new Error(`${what}\ncase: ${JSON.stringify(k)}\nresult: ${JSON.stringify(r)}`);
  };
  const scopes = k.via === "url" ? [] : scopesOf(k.key); // a key in the URL is refused: proxies log it
  const has = (s: string) => scopes.includes(s) || scopes.includes("admin");
  const post = k.op !== "occupancy" && k.op !== "users";
  const controlOk = has("admin") && k.origin === "" && k.op !== "nope" && (!post || k.media.startsWith("application/json"));
  if (ok(r.control) !== controlOk) fail(`the control plane answered ${r.control}; ${controlOk ? "the admin key's request should pass" : "it should refuse"}`);
  if (!ok(r.control) && !CODES.has(r.controlError ?? "")) fail(`the control plane's refusal has no known code (${r.controlError})`);
  // A known key answers only its own doors; a token-less request with no key at all gets 401 at each.
  if (k.key !== "none" && ok(r.publish) !== has("publish")) fail(`publish answered ${r.publish} with scopes ${scopes.join(",") || "none"}`);
  if (k.key !== "none" && ok(r.history) !== has("read")) fail(`history answered ${r.history} with scopes ${scopes.join(",") || "none"}`);
  for (const [door, status] of Object.entries(r)) if (status === 500) fail(`${door} answered 500 (internal error)`);
}
