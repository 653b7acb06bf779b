import { toGatewayChannel } from "../protocol/centrifugo-channels.js";
import { readTags, type Tags } from "../protocol/tags.js";

/**
 * Reading requests of Centrifugo's server API (pure): the methods, the parameters of each as this gateway
 * takes them, and the two forms a request comes in (`POST /api/<method>` with the parameters as the body,
 * `POST /api` with `{"method","params"}` commands, one per line).
 */
export const METHODS = [
  "publish",
  "broadcast",
  "subscribe",
  "unsubscribe",
  "disconnect",
  "refresh",
  "presence",
  "presence_stats",
  "history",
  "history_remove",
  "channels",
  "info",
  "batch",
] as const;
export type Method = (typeof METHODS)[number];
export const isMethod = (s: string): s is Method => (METHODS as readonly string[]).includes(s);

/** The most a `reason` or `user` may be (the control plane's bounds). */
const MAX_TEXT = 256;
/** `idempotency_key` becomes the message's dedup id: printable ASCII, as the native door's Idempotency-Key. */
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,128}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export type Parsed<T> = T | { error: string };
type Obj = Record<string, unknown>;
export const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

/** One command of `POST /api`: its method, parameters and optional id (echoed in the reply). */
export type Command = { id?: number; method: string; params: unknown };

/**
 * The commands of a `POST /api` body: one JSON object, or several, one per line (cent.js' pipeline sends
 * those). A line that is not a command is a reply of its own (`bad`).
 */
export function parseCommands(text: string): (Command | { bad: string; id?: number })[] | { error: string } {
  const one = tryJson(text);
  const values = one.ok
    ? [one]
    : text
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => tryJson(l));
  if (values.length === 0) return { error: "the body holds no command" };
  const parsed: unknown[] = [];
  for (const v of values) {
    if (!v.ok) return { error: "the body is not JSON: one command per line" };
    parsed.push(v.value);
  }
  return parsed.map((c) => {
    if (!isObject(c)) return { bad: "a command must be a JSON object" };
    const id = typeof c.id === "number" && Number.isSafeInteger(c.id) && c.id > 0 ? c.id : undefined;
    if (typeof c.method !== "string" || c.method === "") return { bad: "method must be a method's name", ...(id ? { id } : {}) };
    return { method: c.method.toLowerCase(), params: c.params ?? {}, ...(id ? { id } : {}) };
  });
}

function tryJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

/** A channel field: present, a string, and a name this gateway can hold (then mapped). */
function channelOf(o: Obj, field = "channel"): Parsed<{ name: string; channel: string }> {
  const v = o[field];
  if (typeof v !== "string" || v === "") return { error: `${field} is required` };
  const m = toGatewayChannel(v);
  return m.ok ? { name: v, channel: m.name } : { error: m.reason };
}

function userOf(o: Obj): Parsed<string> {
  const u = o.user;
  if (typeof u !== "string" || u.length === 0 || u.length > MAX_TEXT) return { error: `user must be a string of 1-${MAX_TEXT} characters` };
  return u;
}

/** Fields this gateway cannot honour: refused by name (an empty or false value is no request for them). */
function refuseSet(o: Obj, fields: Record<string, string>): { error: string } | undefined {
  for (const [f, why] of Object.entries(fields)) {
    const v = o[f];
    const empty =
      v === undefined ||
      v === null ||
      v === false ||
      v === "" ||
      v === 0 ||
      (Array.isArray(v) && v.length === 0) ||
      (isObject(v) && Object.keys(v).length === 0);
    if (!empty) return { error: `${f}: ${why}` };
  }
  return undefined;
}

const ALL_HISTORY = "every publication is stored here: the channel's stream is its history";
const NO_DELTA = "deltas are chosen per channel by the gateway's delta rules (docs/backends.md), not per publication";
const NO_VERSION = "publication versions are not kept here";

/** What a publish carries: JSON data, or bytes (b64data), the dedup key and the tags (protocol/tags.ts). */
export type Payload = { data: unknown; bytes?: Buffer; idempotencyKey?: string; tags?: Tags };

function payloadOf(o: Obj): Parsed<Payload> {
  const refused = refuseSet(o, { skip_history: ALL_HISTORY, delta: NO_DELTA, version: NO_VERSION, version_epoch: NO_VERSION });
  if (refused) return refused;
  const t = readTags(o.tags);
  if ("error" in t) return t;
  const tags = t.tags ? { tags: t.tags } : {};
  const key = o.idempotency_key;
  if (key !== undefined && key !== "" && (typeof key !== "string" || !IDEMPOTENCY_KEY.test(key)))
    return { error: "idempotency_key must be 1-128 printable ASCII characters" };
  const idem = { ...(typeof key === "string" && key !== "" ? { idempotencyKey: key } : {}), ...tags };
  if (o.b64data !== undefined && o.b64data !== "") {
    if (o.data !== undefined) return { error: "give data or b64data, not both" };
    if (typeof o.b64data !== "string" || !BASE64.test(o.b64data)) return { error: "b64data must be standard base64" };
    return { data: undefined, bytes: Buffer.from(o.b64data, "base64"), ...idem };
  }
  if (o.data === undefined) return { error: "data is required" };
  return { data: o.data, ...idem };
}

export type PublishParams = { name: string; channel: string } & Payload;
export type BroadcastParams = { channels: { name: string; channel: string }[] } & Payload;
export type StreamPosition = { offset: number; epoch: string };
export type HistoryParams = { name: string; channel: string; limit: number; since?: StreamPosition; reverse: boolean };
export type DisconnectParams = { user: string; reconnect: boolean; reason: string };
export type UnsubscribeParams = { user: string; name: string; channel: string };
export type SubscribeParams = { user: string; name: string; channel: string; client?: string; since?: StreamPosition; info?: unknown };
export type RefreshParams = { user: string; expired: boolean };
export type ChannelsParams = { pattern: string };

export function publishParams(o: Obj): Parsed<PublishParams> {
  const c = channelOf(o);
  if ("error" in c) return c;
  const p = payloadOf(o);
  return "error" in p ? p : { ...c, ...p };
}

export function broadcastParams(o: Obj, maxChannels: number): Parsed<BroadcastParams> {
  const list = o.channels;
  if (!Array.isArray(list) || list.length === 0) return { error: "channels must be a non-empty list of channels" };
  if (list.length > maxChannels) return { error: `a broadcast names at most ${maxChannels} channels (this one ${list.length})` };
  const channels: { name: string; channel: string }[] = [];
  for (const name of list) {
    const c = channelOf({ channel: name });
    if ("error" in c) return c;
    channels.push(c);
  }
  if (new Set(channels.map((c) => c.channel)).size !== channels.length) return { error: "channels must not repeat a channel" };
  const p = payloadOf(o);
  return "error" in p ? p : { channels, ...p };
}

/** `limit`: 0 (or none) answers the stream position alone, as Centrifugo does; a negative one (no limit there) is `maxLimit`. */
export function historyParams(o: Obj, maxLimit: number): Parsed<HistoryParams> {
  const c = channelOf(o);
  if ("error" in c) return c;
  const raw = o.limit ?? 0;
  if (typeof raw !== "number" || !Number.isInteger(raw)) return { error: "limit must be an integer" };
  const limit = raw < 0 ? maxLimit : Math.min(raw, maxLimit);
  if (o.reverse !== undefined && typeof o.reverse !== "boolean") return { error: "reverse must be true or false" };
  const reverse = o.reverse === true;
  if (o.since === undefined || o.since === null) return { ...c, limit, reverse };
  if (!isObject(o.since)) return { error: "since must be {offset, epoch}" };
  const offset = o.since.offset ?? 0;
  const epoch = o.since.epoch ?? "";
  if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) return { error: "since.offset must be an integer >= 0" };
  if (typeof epoch !== "string") return { error: "since.epoch must be a string" };
  return { ...c, limit, reverse, since: { offset, epoch } };
}

export function channelParams(o: Obj): Parsed<{ name: string; channel: string }> {
  return channelOf(o);
}

const ONE_USER = "this gateway acts on all of a user's connections: name the user alone";

/**
 * `disconnect`: Centrifugo's codes 3500-3999 and 4500-4999 ask the client not to reconnect, the others to
 * reconnect; without a `disconnect` object the connection is ended for good (Centrifugo's force disconnect).
 */
export function disconnectParams(o: Obj): Parsed<DisconnectParams> {
  const user = userOf(o);
  if (typeof user !== "string") return user;
  const refused = refuseSet(o, { client: ONE_USER, session: ONE_USER, whitelist: ONE_USER, label_filter: ONE_USER, all_users: ONE_USER });
  if (refused) return refused;
  const d = o.disconnect;
  if (d === undefined || d === null) return { user, reconnect: false, reason: "force disconnect" };
  if (!isObject(d)) return { error: "disconnect must be {code, reason}" };
  const code = d.code ?? 0;
  const reason = d.reason ?? "";
  if (typeof code !== "number" || !Number.isInteger(code) || code < 0) return { error: "disconnect.code must be an integer" };
  if (typeof reason !== "string" || reason.length > MAX_TEXT) return { error: `disconnect.reason must be a string of at most ${MAX_TEXT} characters` };
  const terminal = code === 0 || (code >= 3500 && code < 4000) || code >= 4500;
  return { user, reconnect: !terminal, reason: reason || (terminal ? "force disconnect" : "disconnected by the server: reconnect") };
}

export function unsubscribeParams(o: Obj): Parsed<UnsubscribeParams> {
  const user = userOf(o);
  if (typeof user !== "string") return user;
  const refused = refuseSet(o, { client: ONE_USER, session: ONE_USER, label_filter: ONE_USER, all_users: ONE_USER });
  if (refused) return refused;
  const c = channelOf(o);
  return "error" in c ? c : { user, ...c };
}

const NO_SESSION = "connections here have no session apart from their client id: name the client";
const NOT_OVERRIDDEN = "a subscription's options are its namespace's here (NAMESPACES_FILE)";

/**
 * `subscribe`: `recover_since` (`{offset, epoch}`: the position the subscription recovers after), `client` (one
 * connection), `info` (what the channel sees of it). `data`, `expire_at`, `override`, `b64info`, `b64data` and
 * `session` are refused by name.
 */
export function subscribeParams(o: Obj): Parsed<SubscribeParams> {
  const user = userOf(o);
  if (typeof user !== "string") return user;
  const refused = refuseSet(o, {
    session: NO_SESSION,
    data: "the subscribe push carries no data here",
    b64data: "the subscribe push carries no data here",
    b64info: "give info as JSON",
    expire_at: "a server-side subscription lasts as long as its connection here",
    override: NOT_OVERRIDDEN,
  });
  if (refused) return refused;
  const c = channelOf(o);
  if ("error" in c) return c;
  const out: SubscribeParams = { user, ...c };
  if (o.client !== undefined && o.client !== "") {
    if (typeof o.client !== "string" || o.client.length > MAX_TEXT) return { error: `client must be a string of at most ${MAX_TEXT} characters` };
    out.client = o.client;
  }
  const since = o.recover_since;
  if (since !== undefined && since !== null) {
    if (!isObject(since)) return { error: "recover_since must be {offset, epoch}" };
    const offset = since.offset ?? 0;
    const epoch = since.epoch ?? "";
    if (typeof offset !== "number" || !Number.isSafeInteger(offset) || offset < 0) return { error: "recover_since.offset must be an integer >= 0" };
    if (typeof epoch !== "string" || epoch.length > 64) return { error: "recover_since.epoch must be a string of at most 64 characters" };
    out.since = { offset, epoch };
  }
  if (o.info !== undefined && o.info !== null) out.info = o.info;
  return out;
}

export function refreshParams(o: Obj): Parsed<RefreshParams> {
  const user = userOf(o);
  if (typeof user !== "string") return user;
  const refused = refuseSet(o, { client: ONE_USER, session: ONE_USER, label_filter: ONE_USER, all_users: ONE_USER });
  if (refused) return refused;
  if (o.expired !== undefined && typeof o.expired !== "boolean") return { error: "expired must be true or false" };
  return { user, expired: o.expired === true };
}

export function channelsParams(o: Obj): Parsed<ChannelsParams> {
  const p = o.pattern ?? "";
  if (typeof p !== "string" || p.length > 1_024) return { error: "pattern must be a string of at most 1024 characters" };
  return { pattern: p };
}

/**
 * A `channels` pattern (Centrifugo's glob syntax: `*` any run of characters, `?` one, `[abc]`/`[!a-z]` a
 * class, `{a,b}` alternatives, `\` escapes) as a test of a Centrifugo name; "" matches every name.
 */
export function globMatcher(pattern: string): Parsed<(name: string) => boolean> {
  if (pattern === "") return () => true;
  let re = "";
  let depth = 0;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === "\\") {
      const next = pattern[++i];
      if (next === undefined) return { error: "pattern ends with \\" };
      re += escapeRe(next);
    } else if (c === "*") re += "[^]*";
    else if (c === "?") re += "[^]";
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 2);
      if (end < 0) return { error: "pattern has [ without ]" };
      const body = pattern.slice(i + 1, end);
      const negated = body.startsWith("!");
      re += `[${negated ? "^" : ""}${(negated ? body.slice(1) : body).replace(/[\\\]^]/g, "\\$&")}]`;
      i = end;
    } else if (c === "{") {
      depth++;
      re += "(?:";
    } else if (c === "}" && depth > 0) {
      depth--;
      re += ")";
    } else if (c === "," && depth > 0) re += "|";
    else re += escapeRe(c);
  }
  if (depth !== 0) return { error: "pattern has { without }" };
  const compiled = new RegExp(`^${re}$`, "u");
  return (name) => compiled.test(name);
}

const escapeRe = (c: string): string => c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
