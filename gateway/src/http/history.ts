import type { Broker, BrokerMessage, ReplayApi, StreamState } from "../broker/broker.js";
import { readRefusalError, type ReadLimiter } from "../limits/read-limits.js";
import { checkChannel, checkPattern } from "../protocol/channel.js";
import { ErrorCode } from "../protocol/codes.js";
import { dataFields } from "../protocol/serialize.js";
import { brokerFailure, GatewayError } from "../errors.js";
import type { HttpResponse } from "../uws.js";
import { send, sendError, type ResState } from "./respond.js";

export const HISTORY_PREFIX = "/v1/channels/";
const MAX_LIMIT = 1_000;
const DEFAULT_LIMIT = 100;
/** Room kept in an answer for everything but its messages (`firstSeq`, `lastSeq`, `upToSeq`, `next`). */
const ENVELOPE_BYTES = 256;

/** What the history door needs: the broker, its answer bound (HISTORY_MAX_BYTES) and the read allowances. */
export type HistoryContext = {
  broker: Broker;
  /** Largest answer in bytes; the rest of what was asked comes with `next`. */
  maxBytes: number;
  /** Per-IP / per-user read rates and per-IP concurrency (READ_RATE_PER_IP …); undefined: unlimited. */
  reads?: ReadLimiter;
};

/** Who asks, as the authorization chain found: the client's address, and the user a per-user allowance counts (auth/access.ts readerOf). */
export type HistoryReader = { ip: string; user: string | undefined };

/**
 * `GET /v1/channels/{channel}/messages?from_seq=N&limit=L` or `?last=N`: stored messages of one channel,
 * oldest first, read with JetStream direct gets in batches; `?reverse=1[&before_seq=B]&limit=L`: newest
 * first, below B. Payloads are spliced into the JSON as stored. An answer is at most `limit` messages and
 * HISTORY_MAX_BYTES: when it stops short of the channel's end (its start, in reverse), `next` is the from_seq
 * (before_seq) to continue with. Reads are counted per IP and user (429 `rate_limited` with Retry-After).
 */
export async function history(ctx: HistoryContext, res: HttpResponse, st: ResState, path: string, query: string, reader: HistoryReader): Promise<void> {
  const grant = ctx.reads?.take(reader.ip, reader.user, Date.now(), true);
  if (grant && !grant.ok) {
    const e = readRefusalError(grant);
    return sendError(res, st, { code: e.code, message: e.message, temporary: true, retryAfterSec: e.retryAfterSec });
  }
  try {
    await answer(ctx, res, st, path, query);
  } finally {
    grant?.release();
  }
}

async function answer(ctx: HistoryContext, res: HttpResponse, st: ResState, path: string, query: string): Promise<void> {
  const { broker } = ctx;
  const encoded = /^\/v1\/channels\/([^/]+)\/messages$/.exec(path)?.[1];
  if (encoded === undefined) return sendError(res, st, { code: ErrorCode.NotFound, message: "use /v1/channels/{channel}/messages" });
  let channel: string;
  try {
    channel = decodeURIComponent(encoded);
  } catch {
    return sendError(res, st, { code: ErrorCode.BadChannel, message: "channel is not valid percent-encoding" });
  }
  const q = new URLSearchParams(query);
  const lastValues = q.get("last_per_subject") === "1";
  const c = lastValues ? checkPattern(channel) : checkChannel(channel);
  if (!c.ok) return sendError(res, st, { code: ErrorCode.BadChannel, message: c.reason });
  const replay = broker.replay;
  if (!replay) return sendError(res, st, { code: ErrorCode.UnsupportedByBroker, message: `the ${broker.kind} broker keeps no history` });
  if (lastValues) return lastPerSubject(ctx, replay, res, st, channel, q);
  const num = (name: string, min: number, max: number): number | undefined | "bad" => {
    const v = q.get(name);
    if (v === null) return undefined;
    const n = Number(v);
    return Number.isInteger(n) && n >= min && n <= max ? n : "bad";
  };
  const fromSeq = num("from_seq", 1, Number.MAX_SAFE_INTEGER);
  const beforeSeq = num("before_seq", 1, Number.MAX_SAFE_INTEGER);
  const last = num("last", 1, MAX_LIMIT);
  const limit = num("limit", 1, MAX_LIMIT);
  const reverse = q.get("reverse");
  if (fromSeq === "bad" || beforeSeq === "bad" || last === "bad" || limit === "bad" || (reverse !== null && reverse !== "1" && reverse !== "0"))
    return sendError(res, st, {
      code: ErrorCode.BadRequest,
      message: `from_seq and before_seq must be >= 1; last and limit from 1 to ${MAX_LIMIT}; reverse 1 or 0`,
    });
  if (fromSeq !== undefined && last !== undefined) return sendError(res, st, { code: ErrorCode.BadRequest, message: "give from_seq or last, not both" });
  const backwards = reverse === "1";
  if (backwards && (fromSeq !== undefined || last !== undefined))
    return sendError(res, st, { code: ErrorCode.BadRequest, message: "reverse pages with before_seq and limit: from_seq and last are for reading forwards" });
  if (!backwards && beforeSeq !== undefined) return sendError(res, st, { code: ErrorCode.BadRequest, message: "before_seq needs reverse=1" });
  if (!broker.isConnected()) return sendError(res, st, { code: ErrorCode.BrokerUnavailable, message: "broker is not connected; retry" });
  try {
    const bounds = await replay.state(channel);
    if (backwards) return send(res, st, 200, await backPage(ctx, replay, channel, beforeSeq ?? bounds.lastSeq + 1, limit ?? DEFAULT_LIMIT, bounds));
    const start = last !== undefined ? await replay.startOfLastN(channel, last) : Math.max(fromSeq ?? bounds.firstSeq, 1);
    const count = last ?? limit ?? DEFAULT_LIMIT;
    const h = bounds.lastSeq >= start ? await replay.history(channel, start, count, ctx.maxBytes) : { messages: [], more: false };
    const page = fit(h.messages, ctx.maxBytes);
    // Stopped short of the channel's end (by `limit` or the byte bound): `next` continues it.
    const next = page.items.length > 0 && (page.items.length < h.messages.length || h.more) ? `,"next":${page.last + 1}` : "";
    send(res, st, 200, `{"messages":[${page.items.join(",")}],"firstSeq":${bounds.firstSeq},"lastSeq":${bounds.lastSeq}${next}}`);
  } catch (e) {
    const f = brokerFailure(e, broker.isConnected(), "history");
    sendError(res, st, f);
  }
}

/** A page read backwards from `before`, newest first; `next` is the `before_seq` of the older page. */
async function backPage(ctx: HistoryContext, replay: ReplayApi, channel: string, before: number, limit: number, bounds: StreamState): Promise<string> {
  if (!replay.historyBack) throw new GatewayError(ErrorCode.UnsupportedByBroker, "this broker cannot read history backwards");
  const h = before > 1 ? await replay.historyBack(channel, before, limit, ctx.maxBytes) : { messages: [], more: false };
  const page = fit(h.messages, ctx.maxBytes);
  const next = page.items.length > 0 && (page.items.length < h.messages.length || h.more) ? `,"next":${page.last}` : "";
  return `{"messages":[${page.items.join(",")}],"firstSeq":${bounds.firstSeq},"lastSeq":${bounds.lastSeq},"reverse":true${next}}`;
}

const item = (x: BrokerMessage): string => `{"seq":${x.seq},"ts":${x.ts},"channel":${JSON.stringify(x.channel)},${dataFields(x.payload, x.type)}}`;

/** The leading messages whose JSON fits in `maxBytes` (at least one), and the seq of the last of them. */
function fit(msgs: readonly BrokerMessage[], maxBytes: number): { items: string[]; last: number } {
  const budget = maxBytes - ENVELOPE_BYTES;
  const items: string[] = [];
  let bytes = 0;
  let last = 0;
  for (const x of msgs) {
    const s = item(x);
    const size = Buffer.byteLength(s) + 1;
    if (items.length > 0 && bytes + size > budget) break;
    items.push(s);
    bytes += size;
    last = x.seq;
  }
  return { items, last };
}

/**
 * `?last_per_subject=1[&up_to_seq=L][&from_seq=N][&limit=K]` on a channel or pattern: the newest stored
 * message of each matching channel as of L (default: the stream's last seq now), in stream order, one page
 * per request: at most K (default and most 1,000) messages and HISTORY_MAX_BYTES, however many channels
 * match. `next` (when present) is the from_seq of the following page, to be asked with the same up_to_seq:
 * pages follow stream order, so none is left out and none comes twice.
 */
async function lastPerSubject(ctx: HistoryContext, replay: ReplayApi, res: HttpResponse, st: ResState, pattern: string, q: URLSearchParams): Promise<void> {
  const { broker } = ctx;
  const pos = (name: string, max = Number.MAX_SAFE_INTEGER): number | undefined | "bad" => {
    const v = q.get(name);
    if (v === null) return undefined;
    const n = Number(v);
    return Number.isSafeInteger(n) && n >= 1 && n <= max ? n : "bad";
  };
  const upTo = pos("up_to_seq");
  const fromSeq = pos("from_seq");
  const limit = pos("limit", MAX_LIMIT);
  if (upTo === "bad" || fromSeq === "bad" || limit === "bad")
    return sendError(res, st, { code: ErrorCode.BadRequest, message: `up_to_seq and from_seq must be integers >= 1, limit from 1 to ${MAX_LIMIT}` });
  if (!replay.lastPerSubject) return sendError(res, st, { code: ErrorCode.UnsupportedByBroker, message: "this broker has no last-value reads" });
  if (!broker.isConnected()) return sendError(res, st, { code: ErrorCode.BrokerUnavailable, message: "broker is not connected; retry" });
  try {
    const bounds = await replay.state(pattern);
    const until = upTo ?? bounds.lastSeq;
    const lv = await replay.lastPerSubject(pattern, until, (fromSeq ?? 1) - 1, { maxMessages: limit ?? MAX_LIMIT, maxBytes: ctx.maxBytes });
    const page = fit(lv.messages, ctx.maxBytes);
    // Cut here by the byte bound: continue after the last message sent; else where the page says.
    const cursor = page.items.length < lv.messages.length ? page.last : lv.more ? (lv.cursor ?? page.last) : 0;
    const next = cursor > 0 ? `,"next":${cursor + 1}` : "";
    send(res, st, 200, `{"messages":[${page.items.join(",")}],"firstSeq":${bounds.firstSeq},"lastSeq":${bounds.lastSeq},"upToSeq":${until}${next}}`);
  } catch (e) {
    const f = brokerFailure(e, broker.isConnected(), "last values");
    sendError(res, st, f);
  }
}
