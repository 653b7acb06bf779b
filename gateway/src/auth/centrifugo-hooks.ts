import { dataOf, expireAtOf, HookDisconnect, malformed, proxyRefusal, readProxyAnswer, type ProxyAnswer, type ProxyBase } from "../backend/proxy-format.js";
import { checkPattern } from "../protocol/channel.js";
import { toCentrifugoChannel, toGatewayChannel } from "../protocol/centrifugo-channels.js";
import { parseAutoChannels } from "./permissions.js";
import type { Principal } from "./principal.js";

/**
 * The hooks' bodies in Centrifugo's proxy format (HOOK_FORMAT=centrifugo; backend/proxy-format.ts reads the
 * answers): what each request holds, and what each `result` grants here. Pure (unit-tested).
 */

/** Who a call is about: the connection (or request) as Centrifugo's requests name it. */
export type ProxyWho = {
  client: string;
  transport: string;
  /** The connection's codec (`json`, `msgpack`). */
  protocol: string;
  /** The named user, or "" (Centrifugo's anonymous user). */
  user: string;
  /** The connect hook's `meta` (or `info`), sent back to every later hook as `meta`. */
  meta: unknown;
};

/** The fields every request starts with. */
export const baseOf = (w: Pick<ProxyWho, "client" | "transport" | "protocol">, encoding: ProxyBase["encoding"] = "json"): ProxyBase => ({
  client: w.client,
  transport: w.transport,
  protocol: w.protocol,
  encoding,
});

/** Adds `meta` when the connect hook gave one. */
const withMeta = <T extends object>(body: T, w: ProxyWho): T => (w.meta === undefined || w.meta === null ? body : { ...body, meta: w.meta });

/**
 * A channel as a Centrifugo backend names it (protocol/centrifugo-channels.ts: `chat.room` is `chat:room`, the
 * names the server API takes); a channel with no Centrifugo name (`50%off`) is sent as it is.
 */
export function centrifugoName(channel: string): string {
  const m = toCentrifugoChannel(channel);
  return m.ok ? m.name : channel;
}

export const subscribeBody = (w: ProxyWho, channel: string) => withMeta({ ...baseOf(w), user: w.user, channel: centrifugoName(channel) }, w);
export const refreshBody = (w: ProxyWho) => withMeta({ ...baseOf(w), user: w.user }, w);
export const subRefreshBody = (w: ProxyWho, channel: string) => withMeta({ ...baseOf(w), user: w.user, channel: centrifugoName(channel) }, w);
export const rpcBody = (w: ProxyWho, method: string, data: unknown) => withMeta({ ...baseOf(w), user: w.user, method, data: data ?? null }, w);

/** A publish: a JSON value in `data` (encoding json), bytes in `b64data` (encoding binary). */
export function publishBody(w: ProxyWho, channel: string, data: unknown, binary: boolean): Record<string, unknown> {
  const name = centrifugoName(channel);
  const body = binary ? { ...baseOf(w, "binary"), user: w.user, channel: name, b64data: data } : { ...baseOf(w), user: w.user, channel: name, data };
  return withMeta(body, w);
}

/**
 * Reads an answer that must allow to go on: its `result`, or throws what its `error` (a refusal with the mapped
 * code) or `disconnect` (HookDisconnect) says. `what` names what was asked about in the message.
 */
export function resultOf(hook: string, what: string, answer: Record<string, unknown>): Record<string, unknown> {
  const a: ProxyAnswer = readProxyAnswer(hook, answer);
  if (a.kind === "disconnect") throw new HookDisconnect(`${what} refused`, { code: a.code, reason: a.reason });
  if (a.kind === "error") throw proxyRefusal(what, a);
  return a.result;
}

/** What a connect `result` grants, as the native connect hook's grant has it (auth/hooks.ts applies it). */
export type ConnectResult = {
  sub: string[];
  auto: string[];
  user?: string;
  exp?: number;
  info?: unknown;
};

/**
 * A connect `result`: `user` (counts without a token, as the native hook's), `expire_at` (the connection's
 * expiry), `channels` and the keys of `subs` (server-side subscriptions, readable without a `channels.sub`
 * permission of their own: the backend named them), `meta` (else `info`, else `b64info` as its base64 text)
 * as the connection's info, sent back to the other hooks. `data`, for a connect reply this protocol does not
 * have, is not used.
 */
export function readConnectResult(p: Principal, r: Record<string, unknown>): ConnectResult {
  const out: ConnectResult = { sub: [], auto: [] };
  const names: unknown[] = [];
  if (r.channels !== undefined && r.channels !== null) {
    if (!Array.isArray(r.channels)) throw malformed("connect", "channels must be a list");
    names.push(...(r.channels as unknown[]));
  }
  if (r.subs !== undefined && r.subs !== null) {
    if (typeof r.subs !== "object" || Array.isArray(r.subs)) throw malformed("connect", "subs must be an object");
    names.push(...Object.keys(r.subs));
  }
  // Channel names as Centrifugo has them (`chat:room`), each mapped to the channel here (`chat.room`).
  for (const [i, n] of names.entries()) {
    const m = typeof n === "string" ? toGatewayChannel(n) : undefined;
    if (!m?.ok || !checkPattern(m.name).ok) throw malformed("connect", `channel ${JSON.stringify(n)?.slice(0, 80)} is not a channel here`);
    names[i] = m.name;
  }
  if (names.length) {
    const auto = parseAutoChannels(names, { sub: [...p.perms.sub, ...(names as string[])], pub: [] });
    if (typeof auto === "string") throw malformed("connect", auto.replace("channels.auto", "channels"));
    out.sub = [...auto];
    out.auto = [...auto];
  }
  if (r.user !== undefined && r.user !== "") {
    if (typeof r.user !== "string" || r.user.length > 256) throw malformed("connect", "user must be a string of at most 256 characters");
    out.user = r.user;
  }
  const exp = expireAtOf("connect", r);
  if (exp !== undefined) out.exp = exp;
  const info = r.meta ?? r.info ?? (typeof r.b64info === "string" && r.b64info !== "" ? r.b64info : undefined);
  if (info !== undefined && info !== null) out.info = info;
  return out;
}

/** A subscribe `result`: `expire_at` (the subscription's expiry) and `data`/`b64data` for the client's `ok`. */
export function readSubscribeResult(r: Record<string, unknown>): { exp?: number; data?: unknown } {
  const exp = expireAtOf("subscribe", r);
  const d = dataOf("subscribe", r);
  return {
    ...(exp !== undefined ? { exp } : {}),
    ...(d === undefined ? {} : "data" in d ? { data: d.data } : { data: Buffer.from(d.bytes).toString("base64") }),
  };
}
