import { checkChannel, checkPattern } from "./channel.js";
import { ErrorCode } from "./codes.js";
import { jsonNestsDeeper, TOO_DEEP } from "./depth.js";
import { isBadItem, parseBatch, parsePublishItem, type BadItem, type PublishItem } from "./batch.js";
import { mayHoldHugeNumber, unfitForJson } from "./json-numbers.js";

/** Start position of a subscription (replay); without one a subscription is live only. */
export type StartPosition = { seq: number; epoch?: string } | { time: string } | { last: number } | "all" | "last_per_subject";

export type SubFrame = {
  op: "sub";
  id?: Id;
  channel: string;
  from?: StartPosition;
  durable?: string;
  ack?: boolean;
  maxInflight?: number;
  /**
   * Presence (concrete channels only): `true` enters the channel's members and receives its join/leave
   * frames; `"member"` enters without receiving them; `"watch"` receives them without entering.
   */
  presence?: true | "member" | "watch";
  /** Shown to the channel's other members with this one (any JSON, at most PRESENCE_INFO_BYTES encoded). */
  info?: unknown;
  /** Per-channel Fossil deltas after each channel's first message (PROTOCOL.md "Deltas"); not with `durable`. */
  delta?: "fossil";
  /** A subscription token (a JWT naming this channel) granting the read (AUTH.md "Subscription tokens"). */
  token?: string;
};
/** A new subscription token for a subscription a token granted: `ok` with its `exp`. */
export type SubRefreshFrame = { op: "sub_refresh"; id?: Id; channel: string; token: string };
/** The members of a channel's presence. */
export type PresenceFrame = { op: "presence"; id?: Id; channel: string };
export type UnsubFrame = { op: "unsub"; id?: Id; channel: string };
export type PubFrame = {
  op: "pub";
  id?: Id;
  channel: string;
  data: unknown;
  msgId?: string;
  ttl?: string;
  /** `data` is bytes of this content type. */ type?: string;
};
/** `{"op":"pub","id":N,"batch":[{channel,data,msgId?},…]}`: published pipelined, answered with one result per item. */
export type PubBatchFrame = { op: "pub"; id?: Id; batch: (PublishItem | BadItem)[] };
export type PingFrame = { op: "ping"; id?: Id };
export type AckFrame = { op: "ack" | "nak" | "term" | "inprogress"; id?: Id; seq: number; delay?: number; sub?: string };
export type RefreshFrame = { op: "refresh"; id?: Id; token: string };
/** A call of the application backend's `method` (RPC_HOOK_URL), answered by `ok` with its `data` or by `err`. */
export type RpcFrame = { op: "rpc"; id: Id; method: string; data: unknown };
export type ClientFrame = SubFrame | UnsubFrame | PubFrame | PubBatchFrame | PingFrame | AckFrame | RefreshFrame | SubRefreshFrame | PresenceFrame | RpcFrame;
export type Id = number | string;

/**
 * Every op of a client frame, as the parser knows them. The fuzzers generate frames of each from this list
 * (scripts/fuzz/arbitraries.mjs), so an op added here without a generator fails them.
 */
export const CLIENT_OPS = [
  "sub",
  "unsub",
  "pub",
  "ping",
  "ack",
  "nak",
  "term",
  "inprogress",
  "presence",
  "refresh",
  "sub_refresh",
  "rpc",
] as const satisfies readonly ClientFrame["op"][];
/** Compile time: an op of `ClientFrame` missing from `CLIENT_OPS` fails the build here. */
export const CLIENT_OPS_COMPLETE: [Exclude<ClientFrame["op"], (typeof CLIENT_OPS)[number]>] extends [never] ? true : never = true;

export type ParseResult = { ok: true; frame: ClientFrame } | { ok: false; id?: Id; code: ErrorCode; message: string };

const MAX_ID_LENGTH = 64;
const DURABLE = /^[A-Za-z0-9_-]{1,64}$/;
/** The largest `info` of a presence member, as JSON. */
export const PRESENCE_INFO_BYTES = 1_024;

const fail = (code: ErrorCode, message: string, id?: Id): ParseResult => ({ ok: false, code, message, ...(id !== undefined ? { id } : {}) });

/**
 * What a codec made of a client frame's bytes: a value for `validateClientFrame`, or why there is none.
 * `mayNotFitJson`: the value may hold what JSON cannot store (a number that JSON.parse made infinite; in a
 * binary encoding also NaN, bytes, timestamps), so validation walks it (`unfitForJson`).
 */
export type Decoded = { ok: true; value: unknown; mayNotFitJson: boolean } | { ok: false; code: ErrorCode; message: string };

/** Decodes one client text frame of fanout.v1 (JSON); validation is `validateClientFrame`'s. */
export function decodeJsonText(text: string): Decoded {
  if (jsonNestsDeeper(text)) return { ok: false, code: ErrorCode.BadRequest, message: TOO_DEEP };
  try {
    return { ok: true, value: JSON.parse(text), mayNotFitJson: mayHoldHugeNumber(text) };
  } catch {
    return { ok: false, code: ErrorCode.BadJson, message: "frame is not valid JSON" };
  }
}

/** Parses and validates one client text frame of fanout.v1. Never throws. */
export function parseClientFrame(text: string): ParseResult {
  const d = decodeJsonText(text);
  return d.ok ? validateClientFrame(d.value, d.mayNotFitJson) : fail(d.code, d.message);
}

/**
 * Validates a decoded client frame, whatever codec decoded it: the same checks and the same error frames
 * for every subprotocol. Never throws.
 */
export function validateClientFrame(raw: unknown, mayNotFitJson: boolean): ParseResult {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw) || raw instanceof Uint8Array) return fail(ErrorCode.BadJson, "frame must be a JSON object");
  const o = raw as Record<string, unknown>;
  let id: Id | undefined;
  if (o.id !== undefined) {
    // -0 would not survive the echo (JSON writes it as 0): it is 0.
    if (typeof o.id === "number" && Number.isFinite(o.id)) id = o.id === 0 ? 0 : o.id;
    else if (typeof o.id === "string" && o.id.length <= MAX_ID_LENGTH) id = o.id;
    else return fail(ErrorCode.BadRequest, `id must be a number or a string of at most ${MAX_ID_LENGTH} characters`);
  }
  const unfit = mayNotFitJson ? unfitForJson(o.op === "pub" ? withoutBytesData(o) : o) : undefined;
  if (unfit !== undefined) return fail(ErrorCode.BadRequest, unfit, id);
  switch (o.op) {
    case "sub":
      return parseSub(o, id);
    case "unsub": {
      const c = checkPattern(o.channel);
      if (!c.ok) return fail(ErrorCode.BadChannel, c.reason, id);
      return { ok: true, frame: { op: "unsub", id, channel: o.channel as string } };
    }
    case "pub":
      return parsePub(o, id);
    case "ping":
      return { ok: true, frame: { op: "ping", id } };
    case "ack":
    case "nak":
    case "term":
    case "inprogress":
      return parseAck(o, id);
    case "presence": {
      const c = checkChannel(o.channel);
      if (!c.ok) return fail(ErrorCode.BadChannel, c.reason, id);
      return { ok: true, frame: { op: "presence", id, channel: o.channel as string } };
    }
    case "refresh":
      if (typeof o.token !== "string" || o.token.length === 0) return fail(ErrorCode.BadRequest, "token must be a non-empty string", id);
      return { ok: true, frame: { op: "refresh", id, token: o.token } };
    case "sub_refresh": {
      const c = checkPattern(o.channel);
      if (!c.ok) return fail(ErrorCode.BadChannel, c.reason, id);
      if (!isToken(o.token)) return fail(ErrorCode.BadRequest, "token must be a non-empty string", id);
      return { ok: true, frame: { op: "sub_refresh", id, channel: o.channel as string, token: o.token } };
    }
    case "rpc":
      return parseRpc(o, id);
    case undefined:
      return fail(ErrorCode.UnknownOp, "op is missing", id);
    default:
      return fail(ErrorCode.UnknownOp, `unknown op ${JSON.stringify(o.op).slice(0, 40)}`, id);
  }
}

const isToken = (t: unknown): t is string => typeof t === "string" && t.length > 0;

function parseSub(o: Record<string, unknown>, id: Id | undefined): ParseResult {
  const c = checkPattern(o.channel);
  if (!c.ok) return fail(ErrorCode.BadChannel, c.reason, id);
  const frame: SubFrame = { op: "sub", id, channel: o.channel as string };
  if (o.from !== undefined) {
    const from = parseFrom(o.from);
    if (typeof from === "string" && from !== "all" && from !== "last_per_subject") return fail(ErrorCode.BadRequest, from, id);
    frame.from = from;
  }
  if (o.durable !== undefined) {
    if (typeof o.durable !== "string" || !DURABLE.test(o.durable)) return fail(ErrorCode.BadRequest, "durable must be 1-64 letters, digits, _ or -", id);
    frame.durable = o.durable;
  }
  if (o.ack !== undefined) {
    if (typeof o.ack !== "boolean") return fail(ErrorCode.BadRequest, "ack must be a boolean", id);
    frame.ack = o.ack;
  }
  if (o.maxInflight !== undefined) {
    if (!Number.isInteger(o.maxInflight) || (o.maxInflight as number) < 1 || (o.maxInflight as number) > 10_000)
      return fail(ErrorCode.BadRequest, "maxInflight must be an integer from 1 to 10000", id);
    frame.maxInflight = o.maxInflight as number;
  }
  if (o.token !== undefined) {
    if (!isToken(o.token)) return fail(ErrorCode.BadRequest, "token must be a non-empty string", id);
    frame.token = o.token;
  }
  if (o.delta !== undefined) {
    if (o.delta !== "fossil") return fail(ErrorCode.BadRequest, 'delta must be "fossil"', id);
    if (frame.durable !== undefined || frame.ack) return fail(ErrorCode.BadRequest, "delta is not available on durable subscriptions", id);
    frame.delta = "fossil";
  }
  return parsePresence(o, frame, id);
}

function parsePresence(o: Record<string, unknown>, frame: SubFrame, id: Id | undefined): ParseResult {
  if (o.presence !== undefined) {
    if (o.presence !== true && o.presence !== false && o.presence !== "member" && o.presence !== "watch")
      return fail(ErrorCode.BadRequest, 'presence must be true, false, "member" or "watch"', id);
    if (o.presence !== false) frame.presence = o.presence;
  }
  if (o.info !== undefined) {
    if (frame.presence !== true && frame.presence !== "member") return fail(ErrorCode.BadRequest, 'info goes with presence true or "member"', id);
    if (Buffer.byteLength(JSON.stringify(o.info)) > PRESENCE_INFO_BYTES)
      return fail(ErrorCode.BadRequest, `info must encode to at most ${PRESENCE_INFO_BYTES} bytes of JSON`, id);
    frame.info = o.info;
  }
  if (frame.presence && !checkChannel(frame.channel).ok) return fail(ErrorCode.BadRequest, "presence needs a channel without wildcards", id);
  if (frame.presence && frame.durable !== undefined) return fail(ErrorCode.BadRequest, "presence is not available on durable subscriptions", id);
  return { ok: true, frame };
}

/** Returns the position, or an error message string. */
function parseFrom(v: unknown): StartPosition | string {
  if (v === "all" || v === "last_per_subject") return v;
  if (typeof v !== "object" || v === null || Array.isArray(v)) return 'from must be "all", "last_per_subject", {"seq":N}, {"time":"ISO-8601"} or {"last":N}';
  const f = v as Record<string, unknown>;
  const keys = Object.keys(f).filter((k) => k !== "epoch");
  if (keys.length !== 1) return "from must have exactly one of seq, time, last";
  if ("epoch" in f && !("seq" in f)) return "from.epoch goes with from.seq";
  if ("seq" in f) {
    if (!Number.isSafeInteger(f.seq) || (f.seq as number) < 1) return "from.seq must be an integer >= 1";
    if (f.epoch === undefined) return { seq: f.seq as number };
    if (typeof f.epoch !== "string" || f.epoch.length === 0 || f.epoch.length > 64) return "from.epoch must be the epoch string of an earlier ok frame";
    return { seq: f.seq as number, epoch: f.epoch };
  }
  if ("last" in f)
    return Number.isSafeInteger(f.last) && (f.last as number) >= 1 && (f.last as number) <= 1_000_000
      ? { last: f.last as number }
      : "from.last must be an integer from 1 to 1000000";
  if ("time" in f)
    return typeof f.time === "string" && !Number.isNaN(Date.parse(f.time)) ? { time: new Date(f.time).toISOString() } : "from.time must be an ISO-8601 date";
  return "from must have exactly one of seq, time, last";
}

/**
 * A `pub` as JSON validation sees it: `data` that is bytes (a binary codec's bin) is a binary payload, not a
 * value to store as JSON, so it is left out of the walk (its own item and every batch item's).
 */
function withoutBytesData(o: Record<string, unknown>): unknown {
  const strip = (x: unknown): unknown => (isRecord(x) && x.data instanceof Uint8Array ? { ...x, data: null } : x);
  return Array.isArray(o.batch) ? { ...o, batch: o.batch.map(strip) } : strip(o);
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x);

function parsePub(o: Record<string, unknown>, id: Id | undefined): ParseResult {
  if (o.batch !== undefined) {
    if (o.channel !== undefined || o.data !== undefined) return fail(ErrorCode.BadRequest, "a batch pub has batch only, not channel or data", id);
    const batch = parseBatch(o.batch);
    return typeof batch === "string" ? fail(ErrorCode.BadRequest, batch, id) : { ok: true, frame: { op: "pub", id, batch } };
  }
  const item = parsePublishItem(o);
  if (isBadItem(item)) return fail(item.code, item.message, id);
  return { ok: true, frame: { op: "pub", id, ...item } };
}

/**
 * `rpc`: an `id` (its answer is matched by it), a `method` named as a channel is (dot-separated tokens,
 * without wildcards: the token's `rpc` claim grants methods by pattern), `data` any JSON (null when absent).
 */
function parseRpc(o: Record<string, unknown>, id: Id | undefined): ParseResult {
  if (id === undefined) return fail(ErrorCode.BadRequest, "rpc needs an id: its answer carries it");
  if (o.method === undefined) return fail(ErrorCode.BadRequest, "method is missing", id);
  const m = checkChannel(o.method);
  if (!m.ok) return fail(ErrorCode.BadRequest, `bad method: ${m.reason.replace(/^channel\b/, "the name")}`, id);
  return { ok: true, frame: { op: "rpc", id, method: o.method as string, data: o.data ?? null } };
}

function parseAck(o: Record<string, unknown>, id: Id | undefined): ParseResult {
  if (!Number.isSafeInteger(o.seq) || (o.seq as number) < 1) return fail(ErrorCode.BadRequest, "seq must be an integer >= 1", id);
  const frame: AckFrame = { op: o.op as AckFrame["op"], id, seq: o.seq as number };
  if (o.delay !== undefined) {
    if (o.op !== "nak" || !Number.isInteger(o.delay) || (o.delay as number) < 0 || (o.delay as number) > 3_600_000)
      return fail(ErrorCode.BadRequest, "delay (ms, 0-3600000) is only valid on nak", id);
    frame.delay = o.delay as number;
  }
  if (o.sub !== undefined) {
    if (typeof o.sub !== "string") return fail(ErrorCode.BadRequest, "sub must be a string", id);
    frame.sub = o.sub;
  }
  return { ok: true, frame };
}
