import { readTags, type Tags } from "./tags.js";
import { checkChannel } from "./channel.js";
import { ErrorCode } from "./codes.js";
import { checkContentType, OCTET_STREAM } from "./content-type.js";

/**
 * One message to publish: the same fields as a single `pub` (channel, data, msgId, ttl). `ttl` is the
 * message's time to live in JetStream's `Nats-TTL` form (whole seconds: `30s`), read from e.g. "30s", "5m".
 * `type` is set when `data` is bytes (a binary codec's bin): a binary payload of that content type.
 */
/** One message of a batch; `tags` (the server API's broadcast) are stored with it (protocol/tags.ts). */
export type PublishItem = { channel: string; data: unknown; msgId?: string; ttl?: string; type?: string; tags?: Tags };
/** An item that cannot be published as given: answered in its place, the others go on. */
export type BadItem = { code: ErrorCode; message: string };

/** Most items any batch may have (PUBLISH_BATCH_MAX_ITEMS, checked by the doors, is at most this). */
export const MAX_BATCH_ITEMS = 100_000;

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MSG_ID = /^[\x21-\x7e]{1,128}$/;

/** Reads one publish item (a `pub` frame, or an element of a batch); never throws. */
/** One item; `tags` is read where `withTags` (HTTP batches: `POST /v1/publish`), else ignored. */
export function parsePublishItem(o: unknown, withTags = false): PublishItem | BadItem {
  if (typeof o !== "object" || o === null || Array.isArray(o))
    return { code: ErrorCode.BadRequest, message: "an item must be an object {channel, data, msgId?}" };
  const r = o as Record<string, unknown>;
  const c = checkChannel(r.channel);
  if (!c.ok) return { code: ErrorCode.BadChannel, message: c.reason };
  if (!("data" in r)) return { code: ErrorCode.BadRequest, message: "data is missing" };
  const item: PublishItem = { channel: r.channel as string, data: r.data };
  if (r.enc !== undefined) {
    // Bytes in a JSON frame or body: `"enc":"base64"` and `data` in base64, as JSON subscribers receive them.
    if (r.enc !== "base64" || typeof r.data !== "string" || !BASE64.test(r.data))
      return { code: ErrorCode.BadRequest, message: 'enc must be "base64", with data a base64 string' };
    item.data = Buffer.from(r.data, "base64");
  } else if (r.data instanceof Uint8Array) {
    // A binary codec's bin is a view of the frame, whose buffer uWS reuses once the handler returns: copied.
    item.data = Uint8Array.prototype.slice.call(r.data);
  }
  if (item.data instanceof Uint8Array) {
    const t = checkContentType(r.type ?? OCTET_STREAM);
    if (!t.ok) return { code: ErrorCode.BadRequest, message: t.reason };
    item.type = t.type;
  } else if (r.type !== undefined) return { code: ErrorCode.BadRequest, message: "type goes with data that is bytes (a MessagePack bin)" };
  if (r.msgId !== undefined) {
    if (typeof r.msgId !== "string" || !MSG_ID.test(r.msgId))
      return { code: ErrorCode.BadRequest, message: "msgId must be 1-128 printable ASCII characters without spaces" };
    item.msgId = r.msgId;
  }
  if (r.ttl !== undefined) {
    const ttl = parseTtl(r.ttl);
    if (ttl === undefined) return { code: ErrorCode.BadRequest, message: TTL_FORMAT };
    item.ttl = ttl;
  }
  if (withTags && r.tags !== undefined) {
    const t = readTags(r.tags);
    if ("error" in t) return { code: ErrorCode.BadRequest, message: t.error };
    if (t.tags) item.tags = t.tags;
  }
  return item;
}

/**
 * The longest message TTL: 100 years. NATS keeps a TTL in nanoseconds added to the time of storing, so a
 * longer one overflows a 64-bit count (it refuses `9223372037s`, and the gateway answered its refusal as a
 * broker error); a stream's maxAge bounds it further (auth/access.ts).
 */
export const MAX_TTL_SECONDS = 36_500 * 86_400;

/** What a bad ttl is answered with (every door). */
export const TTL_FORMAT = `ttl must be a duration from 1s to ${MAX_TTL_SECONDS / 86_400}d, like 30s, 5m or 24h`;

/** A message TTL as `Nats-TTL` takes it (`<seconds>s`), from "30s", "5m", "1h", "2d" or a number of seconds; undefined when invalid. */
export function parseTtl(v: unknown): string | undefined {
  let seconds: number;
  if (typeof v === "number") seconds = v;
  else if (typeof v === "string") {
    const m = /^(\d+)(s|m|h|d)$/.exec(v.trim());
    if (!m) return undefined;
    seconds = Number(m[1]) * { s: 1, m: 60, h: 3_600, d: 86_400 }[m[2] as "s" | "m" | "h" | "d"];
  } else return undefined;
  return Number.isSafeInteger(seconds) && seconds >= 1 && seconds <= MAX_TTL_SECONDS ? `${seconds}s` : undefined;
}

/**
 * Reads a batch: a list of 1 to `maxItems` items, each parsed on its own (a bad item is answered in its
 * place). A message for the whole batch when it is not such a list.
 */
export function parseBatch(v: unknown, maxItems = MAX_BATCH_ITEMS, withTags = false): (PublishItem | BadItem)[] | string {
  if (!Array.isArray(v) || v.length === 0) return "batch must be a non-empty list of {channel, data, msgId?}";
  if (v.length > maxItems) return `a batch holds at most ${maxItems} items (this one has ${v.length})`;
  return v.map((o) => parsePublishItem(o, withTags));
}

export const isBadItem = (x: PublishItem | BadItem): x is BadItem => "code" in x;
