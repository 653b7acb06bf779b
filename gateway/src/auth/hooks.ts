import { createHash } from "node:crypto";
import type { HookFormat, HooksSection } from "../config/sections/index.js";
import { BackendCaller, type CallResult } from "../backend/caller.js";
import { dataOf, readRefreshResult, type RefreshOutcome } from "../backend/proxy-format.js";
import { readSecrets } from "../backend/signature.js";
import { GatewayError, WIRE_ERRORS } from "../errors.js";
import type { Logger } from "../log.js";
import { ErrorCode } from "../protocol/codes.js";
import { checkPattern } from "../protocol/channel.js";
import { canSubscribe, parseAutoChannels, parseRpcClaim, type Permissions } from "./permissions.js";
import type { Principal } from "./principal.js";
import { StoredJson, type PublishedBy, type PublishGate, type Replacement } from "../publish/service.js";
import {
  publishBody,
  readConnectResult,
  readSubscribeResult,
  refreshBody,
  resultOf,
  subRefreshBody,
  subscribeBody,
  type ProxyWho,
} from "./centrifugo-hooks.js";

/** What the connect hook is sent (POST JSON). */
export type ConnectHookRequest = {
  /** The token's `sub`, or null when authentication is off. */
  user: string | null;
  /** The token's claims as the gateway read them, or null when authentication is off. */
  claims: Claims | null;
  ip: string;
  /** The upgrade request's headers named in HOOK_HEADERS (lower case; absent ones left out). */
  headers: Record<string, string>;
  /** The door: a WebSocket upgrade, an SSE stream, or one HTTP request (history, presence list, publish). */
  transport: "websocket" | "sse" | "http";
};

/** A connection's claims as the hooks are sent them: its channel permissions, RPC methods and token expiry. */
export type Claims = { channels: { sub: readonly string[]; pub: readonly string[]; auto: readonly string[] }; rpc: readonly string[]; exp: number | null };

/** The claims of `p` as a hook is told them. */
export const claimsOf = (p: Principal): Claims => ({
  channels: { sub: p.perms.sub, pub: p.perms.pub, auto: p.perms.auto ?? [] },
  rpc: p.perms.rpc ?? [],
  exp: p.exp ?? null,
});

/** What the subscribe hook is sent (POST JSON). */
export type SubscribeHookRequest = {
  user: string;
  /** The channel, or a pattern (`room.*`, `room.>`) that reads every channel it matches. */
  channel: string;
  /** `channel` has a wildcard: allowing it allows every channel it matches, now and later. */
  pattern: boolean;
  durable: string | null;
  ip: string;
  info: unknown;
};

/** What the publish hook is sent (POST JSON): never cached, each publish is asked about. */
export type PublishHookRequest = {
  /** The named user (a token, an API key's name, or the connect hook's `user`), or null. */
  user: string | null;
  /** The WebSocket's client id; null for an HTTP publish. */
  client: string | null;
  channel: string;
  data: unknown;
  /** A binary payload: `data` is its base64 (`enc: "base64"`) and `type` its content type. */
  enc?: "base64";
  type?: string;
  ip: string;
  info: unknown;
};

/**
 * What the subscribe hook granted besides allowing: an expiry of the subscription (unix seconds; the
 * sub_refresh hook is asked then, or it ends) and `data` for the client's `ok`.
 */
export type SubscribeGrant = Readonly<{ exp?: number; data?: unknown }>;

/** What the refresh hooks are asked about: the connection, as every hook is told it. */
export type RefreshSubject = Readonly<{
  user: string | null;
  client: string;
  transport: string;
  protocol: string;
  claims: Claims | null;
  ip: string;
  info: unknown;
  /** The token's `meta` claim, if any: the Centrifugo-format hooks' `meta` (else the connect hook's). */
  meta?: unknown;
}>;

/** A connection admitted by the connect hook: its principal with the hook's claims merged, and its `info`. */
export type ConnectDecision = { principal: Principal; grant: HookGrant; info?: unknown };

/** A cached answer: allowed (with the connect hook's decision), or denied with the reason. */
type Cached<T> = { allow: true; value: T; expires: number } | { allow: false; reason: string; expires: number };

/**
 * Hooks to the application backend (Centrifugo's proxy is the model): the connect hook allows or denies a
 * WebSocket upgrade and may attach claims (more channel permissions, server-side subscriptions, a user
 * when authentication is off, an `info` value); the subscribe hook allows or denies each `sub`. Both fail
 * closed: no answer within HOOK_TIMEOUT, a refused connection, a non-2xx status or a malformed answer is
 * `hook_unavailable` (temporary), an answer longer than HOOK_MAX_ANSWER_BYTES `hook_unavailable` (not
 * temporary, read no further than that). Answers are cached (HOOK_CACHE_TTL, HOOK_CACHE_SIZE, least recently used
 * first out) under a digest of everything the hook was sent, so that one caller never gets an answer given
 * to another: subscribe answers only for identified users (a token or the connect hook named them), connect
 * answers only for HTTP requests (a WebSocket asks once, at its upgrade). The publish hook (`askPublish`) is
 * asked about each publish, never cached, by the publish service that every door publishes through. Every
 * request is signed (`Fanout-Signature`) with HOOK_SECRET_FILE's secrets when it is set.
 */
/** The connect, subscribe and publish hooks when any of them is set (the RPC hook is rpc/hook.ts's); undefined when none is. */
export function hooksOf(config: HooksSection, log: Logger): Hooks | undefined {
  const any = config.connectUrl || config.subscribeUrl || config.publishUrl || config.refreshUrl || config.subRefreshUrl;
  return any ? new Hooks(config, log) : undefined;
}

export class Hooks implements PublishGate {
  private readonly subscribeCache: AnswerCache<SubscribeGrant>;
  private readonly connectCache: AnswerCache<ConnectDecision>;
  private readonly caller: BackendCaller;

  constructor(
    private readonly config: HooksSection,
    log: Logger,
  ) {
    this.caller = new BackendCaller(
      { timeoutMs: config.timeoutMs, maxInFlight: config.maxInFlight, maxAnswerBytes: config.maxAnswerBytes, secrets: hookSecrets(config) },
      log,
    );
    this.subscribeCache = new AnswerCache(config.cacheTtlMs, config.cacheSize);
    this.connectCache = new AnswerCache(config.cacheTtlMs, config.cacheSize);
  }

  /** Answers cached per hook (metrics; each at most HOOK_CACHE_SIZE). */
  get cacheSizes(): { connect: number; subscribe: number } {
    return { connect: this.connectCache.entries, subscribe: this.subscribeCache.entries };
  }

  get connectEnabled(): boolean {
    return this.config.connectUrl !== "";
  }

  get subscribeEnabled(): boolean {
    return this.config.subscribeUrl !== "";
  }

  get publishEnabled(): boolean {
    return this.config.publishUrl !== "";
  }

  get refreshEnabled(): boolean {
    return this.config.refreshUrl !== "";
  }

  get subRefreshEnabled(): boolean {
    return this.config.subRefreshUrl !== "";
  }

  private format(hook: keyof HooksSection["formats"]): HookFormat {
    return this.config.formats[hook];
  }

  /**
   * Asks the publish hook (about an API key's publish only with PUBLISH_HOOK_API_KEYS=true); resolves with
   * the data to store (`{ data }` when the hook replaced it, undefined to keep the original), or rejects:
   * `forbidden` (or the answer's `code`, when it is a wire code) when denied, `hook_unavailable` (temporary)
   * when the hook cannot answer. Never cached: the data differs each time.
   */
  async askPublish(by: PublishedBy, channel: string, data: () => unknown, type?: string): Promise<Replacement | undefined> {
    if (by.trusted && !this.config.publishApiKeys) return undefined;
    if (this.format("publish") === "centrifugo") return this.askPublishCentrifugo(by, channel, data, type);
    const sent = data();
    const r: PublishHookRequest = { user: by.user, client: by.client ?? null, channel, data: sent, ip: by.ip, info: by.info ?? null };
    if (type !== undefined) Object.assign(r, { enc: "base64", type });
    const answer = await this.call("publish", this.config.publishUrl, sent instanceof StoredJson ? withStoredData(r, sent) : r);
    if (answer.allow === true) return "data" in answer ? { data: answer.data } : undefined;
    const code = typeof answer.code === "string" && Object.hasOwn(WIRE_ERRORS, answer.code) ? (answer.code as ErrorCode) : ErrorCode.Forbidden;
    const message = typeof answer.message === "string" ? answer.message : reasonOf(answer);
    throw new GatewayError(code, `publish to ${r.channel} denied by the application${message ? `: ${message.slice(0, 200)}` : ""}`);
  }

  /** The publish hook in Centrifugo's format: `result.data`/`b64data` replace the payload. */
  private async askPublishCentrifugo(by: PublishedBy, channel: string, data: () => unknown, type?: string): Promise<Replacement | undefined> {
    const who: ProxyWho = {
      client: by.client ?? "",
      transport: by.client !== undefined ? "websocket" : "http",
      protocol: by.protocol ?? "json",
      user: by.user ?? "",
      meta: by.meta ?? by.info,
    };
    const sent = data();
    const body = publishBody(who, channel, sent instanceof StoredJson ? RAW : sent, type !== undefined);
    const text = sent instanceof StoredJson ? JSON.stringify(body).replace(RAW_JSON, () => sent.text) : JSON.stringify(body);
    const r = resultOf("publish", `publish to ${channel}`, await this.call("publish", this.config.publishUrl, text));
    const d = dataOf("publish", r);
    if (d === undefined) return undefined;
    return d;
  }

  /**
   * Asks the refresh hook whether the connection may go on past its expiry: a new expiry (undefined: none),
   * or `expired`; rejects with `hook_unavailable` when it cannot answer, with the refusal of an `error`
   * answer, or with HookDisconnect. Never cached.
   */
  async refresh(who: RefreshSubject): Promise<RefreshOutcome> {
    if (this.format("refresh") === "centrifugo") {
      const a = await this.call("refresh", this.config.refreshUrl, refreshBody(proxyWho(who)));
      return readRefreshResult("refresh", resultOf("refresh", "refresh", a));
    }
    return readNativeRefresh("refresh", await this.call("refresh", this.config.refreshUrl, who));
  }

  /** Asks the sub_refresh hook whether a subscription may go on past its expiry; as `refresh`. */
  async subRefresh(who: RefreshSubject, channel: string): Promise<RefreshOutcome> {
    if (this.format("subRefresh") === "centrifugo") {
      const a = await this.call("sub_refresh", this.config.subRefreshUrl, subRefreshBody(proxyWho(who), channel));
      return readRefreshResult("sub_refresh", resultOf("sub_refresh", `subscription to ${channel}`, a));
    }
    return readNativeRefresh("sub_refresh", await this.call("sub_refresh", this.config.subRefreshUrl, { ...who, channel }));
  }

  /** Header names to read from the upgrade request for the connect hook. */
  get headerNames(): readonly string[] {
    return this.config.headers;
  }

  /**
   * Asks the connect hook (or, for an HTTP request, its cache); resolves with the merged principal, or
   * rejects with `forbidden`/`hook_unavailable`.
   */
  async connect(
    p: Principal,
    authenticated: boolean,
    ip: string,
    headers: Record<string, string>,
    transport: ConnectHookRequest["transport"],
    conn: { client: string; protocol: string } = { client: "", protocol: "json" },
  ): Promise<ConnectDecision> {
    if (this.format("connect") === "centrifugo") return this.connectCentrifugo(p, authenticated, ip, headers, transport, conn);
    const body: ConnectHookRequest = {
      user: authenticated ? p.user : null,
      claims: authenticated ? claimsOf(p) : null,
      ip,
      headers,
      transport,
    };
    // The token's expiry is part of the body: a cached answer never outlives the claims it was given for.
    const cache = transport === "websocket" ? undefined : this.connectCache;
    return this.ask("connection", cache, body, async () => {
      const answer = await this.call("connect", this.config.connectUrl, body);
      if (answer.allow !== true) return { allow: false, reason: reasonOf(answer) };
      const grant = readGrant(p, answer);
      const principal = applyGrant(p, authenticated, grant);
      return { allow: true, value: answer.info === undefined ? { principal, grant } : { principal, grant, info: answer.info } };
    });
  }

  /**
   * The connect hook in Centrifugo's format: the request names the connection (client, transport, protocol,
   * encoding) and the HOOK_HEADERS headers come as headers of the hook's request, as Centrifugo's proxy sends
   * them; an answer's `error` and `disconnect` are thrown (never cached), its `result` is a grant.
   */
  private async connectCentrifugo(
    p: Principal,
    authenticated: boolean,
    ip: string,
    headers: Record<string, string>,
    transport: ConnectHookRequest["transport"],
    conn: { client: string; protocol: string },
  ): Promise<ConnectDecision> {
    const body = { client: conn.client, transport, protocol: conn.protocol, encoding: "json", ...(p.meta !== undefined ? { meta: p.meta } : {}) };
    const cache = transport === "websocket" ? undefined : this.connectCache;
    // The cache key covers what the answer may depend on and the body does not carry: the token's user and claims, the headers, the address.
    const key = { body, headers, ip, user: authenticated ? p.user : null, claims: authenticated ? claimsOf(p) : null };
    return this.ask("connection", cache, key, async () => {
      const r = resultOf("connect", "connection", await this.call("connect", this.config.connectUrl, body, forwardable(headers)));
      const c = readConnectResult(p, r);
      const grant: HookGrant = Object.freeze({
        sub: c.sub,
        pub: [],
        auto: c.auto,
        ...(c.user !== undefined ? { user: c.user } : {}),
        ...(c.exp !== undefined ? { exp: c.exp } : {}),
      });
      const principal = applyGrant(p, authenticated, grant);
      return { allow: true, value: c.info === undefined ? { principal, grant } : { principal, grant, info: c.info } };
    });
  }

  /**
   * Asks the subscribe hook (or, for an identified user, its cache); rejects with `forbidden` or
   * `hook_unavailable`. A pattern needs `{"allow": true, "pattern": true}` unless SUBSCRIBE_HOOK_PATTERNS is
   * `allow`: a hook written for channels, that allows `room.*` because it is not `room.secret`, would hand
   * out every channel it was asked to guard.
   */
  async subscribe(r: SubscribeHookRequest, identified: boolean, conn?: RefreshSubject): Promise<SubscribeGrant> {
    if (this.format("subscribe") === "centrifugo") {
      const body = subscribeBody(
        proxyWho(conn ?? { user: r.user, client: "", transport: "http", protocol: "json", claims: null, ip: r.ip, info: r.info }),
        r.channel,
      );
      // Keyed by the request with its client: a Centrifugo answer may be meant for one connection.
      return this.ask(`subscription to ${r.channel}`, identified ? this.subscribeCache : undefined, { body, pattern: r.pattern }, async () => {
        const a = await this.call("subscribe", this.config.subscribeUrl, body);
        const result = resultOf("subscribe", `subscription to ${r.channel}`, a);
        // A Centrifugo backend knows no patterns: `result` allows a pattern only with SUBSCRIBE_HOOK_PATTERNS=allow.
        if (r.pattern && this.config.patterns === "explicit")
          return { allow: false, reason: `${r.channel} is a pattern, which a centrifugo-format subscribe hook allows only with SUBSCRIBE_HOOK_PATTERNS=allow` };
        return { allow: true, value: readSubscribeResult(result) };
      });
    }
    return this.ask(`subscription to ${r.channel}`, identified ? this.subscribeCache : undefined, r, async () => {
      const answer = await this.call("subscribe", this.config.subscribeUrl, r);
      if (answer.allow !== true) return { allow: false, reason: reasonOf(answer) };
      if (r.pattern && this.config.patterns === "explicit" && answer.pattern !== true)
        return { allow: false, reason: `${r.channel} is a pattern, and the subscribe hook did not allow patterns ("pattern": true in its answer)` };
      return { allow: true, value: readNativeSubscribe(answer) };
    });
  }

  /** One hook question: the cached answer for exactly this body, or a call (failures are never cached). */
  private async ask<T>(what: string, cache: AnswerCache<T> | undefined, body: unknown, call: () => Promise<Answer<T>>): Promise<T> {
    const cached = cache?.enabled ? { cache, key: digest(body) } : undefined;
    let a = cached?.cache.get(cached.key);
    if (!a) {
      a = await call();
      cached?.cache.set(cached.key, a);
    }
    if (!a.allow) throw denied(what, a.reason);
    return a.value;
  }

  /** Calls a hook with `body` (a value, or JSON text already made). */
  private async call(kind: string, url: string, body: unknown, headers?: Record<string, string>): Promise<Record<string, unknown>> {
    const res = await this.caller.post(kind, url, typeof body === "string" ? body : JSON.stringify(body), headers);
    if ("failed" in res) {
      this.caller.warn(kind, { err: res.cause }, `${kind} hook ${res.why}`);
      throw hookFailed(kind, res);
    }
    const answer = parseObject(res.text);
    if (!res.ok || answer === undefined) {
      this.caller.warn(kind, { status: res.status }, `${kind} hook answered badly`);
      throw new GatewayError(ErrorCode.HookUnavailable, `the ${kind} hook answered ${res.ok ? "no JSON object" : `HTTP ${res.status}`}; retry later`);
    }
    return answer;
  }
}

/** A placeholder for stored JSON text in a body, replaced by the text itself once the body is JSON. */
const RAW = "\u0000stored-json\u0000";
const RAW_JSON = JSON.stringify(RAW);

/** The connection as Centrifugo's requests name it. */
const proxyWho = (w: RefreshSubject): ProxyWho => ({
  client: w.client,
  transport: w.transport,
  protocol: w.protocol,
  user: w.user ?? "",
  meta: w.meta ?? w.info,
});

/** Request headers a hook request must not carry from the client (they belong to the hook request itself). */
const OWN_HEADERS = new Set([
  "host",
  "content-type",
  "content-length",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "upgrade",
  "expect",
  "fanout-signature",
]);

/** The HOOK_HEADERS headers that may go on as headers of a hook request. */
const forwardable = (h: Record<string, string>): Record<string, string> => Object.fromEntries(Object.entries(h).filter(([k]) => !OWN_HEADERS.has(k)));

/** A native refresh answer: `{"allow": true, "exp"?}` extends (no `exp`: no expiry), anything else is `expired`. */
function readNativeRefresh(hook: string, a: Record<string, unknown>): RefreshOutcome {
  if (a.allow !== true) return { expired: true };
  return readRefreshResult(hook, { expire_at: a.exp, info: a.info });
}

/** A native subscribe answer's grant: `exp` (the subscription's expiry, unix seconds) and `data` for the client. */
function readNativeSubscribe(a: Record<string, unknown>): SubscribeGrant {
  const r = readSubscribeResult({ expire_at: a.exp, data: a.data });
  return Object.freeze(r);
}

/** The publish hook's request as JSON text, its `data` the stored text as it is (one line of JSON, checked). */
function withStoredData(r: PublishHookRequest, data: StoredJson): string {
  const { data: _, ...rest } = r;
  const head = JSON.stringify(rest);
  return `${head.slice(0, -1)},"data":${data.text}}`;
}

/**
 * `hook_unavailable` for a call that got no usable answer: temporary, but not for an answer over
 * HOOK_MAX_ANSWER_BYTES (the backend will answer the same again). Its message goes to the client: an
 * unreachable backend is said to be so, never why (ECONNREFUSED, a host name: the log has that).
 */
export function hookFailed(kind: string, res: Extract<CallResult, { failed: string }>): GatewayError {
  const tooLarge = res.failed === "too_large";
  const said = res.failed === "unreachable" ? "is unreachable" : res.why;
  const why = tooLarge ? `${said} (HOOK_MAX_ANSWER_BYTES)` : `${said}; retry later`;
  return new GatewayError(ErrorCode.HookUnavailable, `the ${kind} hook ${why}`, { cause: res.cause, temporary: !tooLarge });
}

/** The secrets hook requests are signed with (HOOK_SECRET_FILE, read at start), none when unset. */
export const hookSecrets = (c: Pick<HooksSection, "secretFile">): string[] => readSecrets("HOOK_SECRET_FILE", c.secretFile);

/** A JSON object, or undefined for anything else (no JSON, an array, a value). */
export function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "object" && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function denied(what: string, reason: unknown): GatewayError {
  return new GatewayError(ErrorCode.Forbidden, `${what} denied by the application${typeof reason === "string" && reason ? `: ${reason.slice(0, 200)}` : ""}`);
}

const reasonOf = (answer: Record<string, unknown>): string => (typeof answer.reason === "string" ? answer.reason : "");

const digest = (body: unknown): string => createHash("sha256").update(JSON.stringify(body)).digest("base64");

type Answer<T> = { allow: true; value: T } | { allow: false; reason: string };

/** Hook answers by the digest of their request, for a TTL, least recently used out first. */
class AnswerCache<T> {
  private readonly map = new Map<string, Cached<T>>();
  constructor(
    private readonly ttlMs: number,
    private readonly size: number,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0 && this.size > 0;
  }

  get entries(): number {
    return this.map.size;
  }

  get(key: string): Answer<T> | undefined {
    const hit = this.map.get(key);
    if (!hit) return undefined;
    this.map.delete(key);
    if (hit.expires <= Date.now()) return undefined;
    this.map.set(key, hit); // re-inserted: most recently used last
    return hit;
  }

  set(key: string, a: Answer<T>): void {
    this.map.delete(key);
    this.map.set(key, { ...a, expires: Date.now() + this.ttlMs });
    // Least recently used first: drop from the front until the cache fits.
    for (const oldest of this.map.keys()) {
      if (this.map.size <= this.size) break;
      this.map.delete(oldest);
    }
  }
}

/** What a connect hook attached: channel permissions and server-side subscriptions, and a user (auth off). */
export type HookGrant = Readonly<{
  sub: readonly string[];
  pub: readonly string[];
  auto: readonly string[];
  rpc?: readonly string[];
  user?: string;
  /** The connection's expiry the hook set (unix seconds): the principal's `exp` is the earlier of it and the token's. */
  exp?: number;
}>;

/** Reads the connect hook's answer into a grant, checked against the token's permissions `p`. */
function readGrant(p: Principal, answer: Record<string, unknown>): HookGrant {
  const bad = (m: string) => new GatewayError(ErrorCode.HookUnavailable, `the connect hook's answer is malformed: ${m}`, { temporary: false });
  const grant: { sub: string[]; pub: string[]; auto: string[]; rpc?: readonly string[]; user?: string; exp?: number } = { sub: [], pub: [], auto: [] };
  const ch = answer.channels;
  if (ch !== undefined) {
    if (typeof ch !== "object" || ch === null || Array.isArray(ch)) throw bad("channels must be an object");
    const c = ch as Record<string, unknown>;
    for (const k of ["sub", "pub"] as const) {
      const v = c[k] ?? [];
      if (!Array.isArray(v) || v.some((x) => !checkPattern(x).ok)) throw bad(`channels.${k} must be a list of patterns`);
      grant[k] = v as string[];
    }
    if (c.auto !== undefined) {
      const a = parseAutoChannels(c.auto, { sub: [...p.perms.sub, ...grant.sub], pub: [] });
      if (typeof a === "string") throw bad(a);
      grant.auto = [...a];
    }
  }
  if (answer.rpc !== undefined) {
    const rpc = parseRpcClaim(answer.rpc);
    if (typeof rpc === "string") throw bad(rpc);
    grant.rpc = rpc;
  }
  if (answer.user !== undefined) {
    if (typeof answer.user !== "string" || answer.user.length === 0 || answer.user.length > 256) throw bad("user must be a string of 1-256 characters");
    grant.user = answer.user;
  }
  if (answer.exp !== undefined) {
    if (!Number.isInteger(answer.exp) || (answer.exp as number) <= 0) throw bad("exp must be unix seconds");
    grant.exp = answer.exp as number;
  }
  return Object.freeze(grant);
}

/**
 * The token's principal with a connect hook's grant on top: permissions and server-side subscriptions are
 * added; the grant's user counts only without a token (the hook then authenticated the request). Also
 * re-applied to the claims of a refreshed token, so that a `refresh` keeps what the hook granted.
 */
export function applyGrant(p: Principal, authenticated: boolean, g: HookGrant): Principal {
  const sub = [...new Set([...p.perms.sub, ...g.sub])];
  const pub = [...new Set([...p.perms.pub, ...g.pub])];
  const merged: Permissions = { sub, pub };
  const auto = [...new Set([...(p.perms.auto ?? []), ...g.auto])].filter((a) => canSubscribe(merged, a));
  const rpc = [...new Set([...(p.perms.rpc ?? []), ...(g.rpc ?? [])])];
  const perms: Permissions = Object.freeze({
    sub: Object.freeze(sub),
    pub: Object.freeze(pub),
    ...(auto.length ? { auto: Object.freeze(auto) } : {}),
    ...(rpc.length ? { rpc: Object.freeze(rpc) } : {}),
  });
  const user = !authenticated && g.user !== undefined ? g.user : p.user;
  const exp = p.exp === undefined ? g.exp : g.exp === undefined ? p.exp : Math.min(p.exp, g.exp);
  return Object.freeze({
    user,
    perms,
    ...(exp !== undefined ? { exp } : {}),
    ...(p.meta !== undefined ? { meta: p.meta } : {}),
    ...(p.info !== undefined ? { info: p.info } : {}),
  });
}
