import type { Broker, BrokerMessage, ReplayApi } from "../broker/broker.js";
import { checkChannel, checkPattern } from "../protocol/channel.js";
import { ErrorCode } from "../protocol/codes.js";
import { dataFields } from "../protocol/serialize.js";
import { brokerFailure } from "../errors.js";
import type { HttpResponse } from "../uws.js";
import { send, sendJson, type ResState } from "./respond.js";

export const HISTORY_PREFIX = "/v1/channels/";
const MAX_LIMIT = 1_000;

/**
 * `GET /v1/channels/{channel}/messages?from_seq=N&limit=L` or `?last=N`: stored messages of one channel,
 * oldest first, read with JetStream direct gets in batches. Payloads are spliced into the JSON as stored.
 */
export async function history(broker: Broker, res: HttpResponse, st: ResState, path: string, query: string): Promise<void> {
  const m = /^\/v1\/channels\/([^/]+)\/messages$/.exec(path);
  if (!m) return sendJson(res, st, 404, { error: "not_found", message: "use /v1/channels/{channel}/messages" });
  let channel: string;
  try {
    channel = decodeURIComponent(m[1]!);
  } catch {
    return sendJson(res, st, 400, { error: ErrorCode.BadChannel, message: "channel is not valid percent-encoding" });
  }
  const q = new URLSearchParams(query);
  const lastValues = q.get("last_per_subject") === "1";
  const c = lastValues ? checkPattern(channel) : checkChannel(channel);
  if (!c.ok) return sendJson(res, st, 400, { error: ErrorCode.BadChannel, message: c.reason });
  const replay = broker.replay;
  if (!replay) return sendJson(res, st, 501, { error: ErrorCode.UnsupportedByBroker, message: `the ${broker.kind} broker keeps no history` });
  if (lastValues) return lastPerSubject(broker, replay, res, st, channel, q);
  const num = (name: string, min: number, max: number): number | undefined | "bad" => {
    const v = q.get(name);
    if (v === null) return undefined;
    const n = Number(v);
    return Number.isInteger(n) && n >= min && n <= max ? n : "bad";
  };
  const fromSeq = num("from_seq", 1, Number.MAX_SAFE_INTEGER);
  const last = num("last", 1, MAX_LIMIT);
  const limit = num("limit", 1, MAX_LIMIT);
  if (fromSeq === "bad" || last === "bad" || limit === "bad")
    return sendJson(res, st, 400, { error: ErrorCode.BadRequest, message: `from_seq must be >= 1; last and limit from 1 to ${MAX_LIMIT}` });
  if (fromSeq !== undefined && last !== undefined) return sendJson(res, st, 400, { error: ErrorCode.BadRequest, message: "give from_seq or last, not both" });
  if (!broker.isConnected()) return sendJson(res, st, 503, { error: ErrorCode.BrokerUnavailable, message: "broker is not connected; retry" });
  try {
    const bounds = await replay.state();
    const start = last !== undefined ? await replay.startOfLastN(channel, last) : Math.max(fromSeq ?? bounds.firstSeq, 1);
    const count = last ?? limit ?? 100;
    const msgs = bounds.lastSeq >= start ? await replay.history(channel, start, count) : [];
    send(res, st, 200, `{"messages":[${msgs.map(item).join(",")}],"firstSeq":${bounds.firstSeq},"lastSeq":${bounds.lastSeq}}`);
  } catch (e) {
    const f = brokerFailure(e, broker.isConnected(), "history");
    sendJson(res, st, f.status, { error: f.code, message: f.message, temporary: f.temporary });
  }
}

const item = (x: BrokerMessage): string => `{"seq":${x.seq},"ts":${x.ts},"channel":${JSON.stringify(x.channel)},${dataFields(x.payload)}}`;

/**
 * `?last_per_subject=1[&up_to_seq=L][&from_seq=N]` on a channel or pattern: the newest stored message of each
 * matching channel as of L (default: the stream's last seq now), one page (one `multi_last` batch) per
 * request. `next` (when present) is the from_seq of the following page, to be asked with the same up_to_seq.
 */
async function lastPerSubject(broker: Broker, replay: ReplayApi, res: HttpResponse, st: ResState, pattern: string, q: URLSearchParams): Promise<void> {
  const pos = (name: string): number | undefined | "bad" => {
    const v = q.get(name);
    if (v === null) return undefined;
    const n = Number(v);
    return Number.isSafeInteger(n) && n >= 1 ? n : "bad";
  };
  const upTo = pos("up_to_seq");
  const fromSeq = pos("from_seq");
  if (upTo === "bad" || fromSeq === "bad")
    return sendJson(res, st, 400, { error: ErrorCode.BadRequest, message: "up_to_seq and from_seq must be integers >= 1" });
  if (!replay.lastPerSubject) return sendJson(res, st, 501, { error: ErrorCode.UnsupportedByBroker, message: "this broker has no last-value reads" });
  if (!broker.isConnected()) return sendJson(res, st, 503, { error: ErrorCode.BrokerUnavailable, message: "broker is not connected; retry" });
  try {
    const bounds = await replay.state();
    const until = upTo ?? bounds.lastSeq;
    const page = await replay.lastPerSubject(pattern, until, (fromSeq ?? 1) - 1);
    const next = page.more ? `,"next":${page.messages.at(-1)!.seq + 1}` : "";
    send(
      res,
      st,
      200,
      `{"messages":[${page.messages.map(item).join(",")}],"firstSeq":${bounds.firstSeq},"lastSeq":${bounds.lastSeq},"upToSeq":${until}${next}}`,
    );
  } catch (e) {
    const f = brokerFailure(e, broker.isConnected(), "last values");
    sendJson(res, st, f.status, { error: f.code, message: f.message, temporary: f.temporary });
  }
}
