import type { Broker } from "../broker/broker.js";
import { checkChannel } from "../protocol/channel.js";
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
  const c = checkChannel(channel);
  if (!c.ok) return sendJson(res, st, 400, { error: ErrorCode.BadChannel, message: c.reason });
  const replay = broker.replay;
  if (!replay) return sendJson(res, st, 501, { error: ErrorCode.UnsupportedByBroker, message: `the ${broker.kind} broker keeps no history` });
  const q = new URLSearchParams(query);
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
    const items = msgs.map((x) => {
      return `{"seq":${x.seq},"ts":${x.ts},"channel":${JSON.stringify(x.channel)},${dataFields(x.payload)}}`;
    });
    send(res, st, 200, `{"messages":[${items.join(",")}],"firstSeq":${bounds.firstSeq},"lastSeq":${bounds.lastSeq}}`);
  } catch (e) {
    const f = brokerFailure(e, broker.isConnected(), "history");
    sendJson(res, st, f.status, { error: f.code, message: f.message, temporary: f.temporary });
  }
}
