import { readerOf } from "../auth/access.js";
import type { BrokerMessage } from "../broker/broker.js";
import { brokerFailure } from "../errors.js";
import { readRefusalError } from "../limits/read-limits.js";
import { readPublisher } from "../protocol/publisher-info.js";
import { readStoredTags } from "../protocol/tags.js";
import { isJsonPayload } from "../protocol/serialize.js";
import { ApiCode, apiErrorOf, badRequest, fail, replyOfThrown, type Reply } from "./codes.js";
import { refusedAccess, type Caller, type ServerApiDeps } from "./context.js";
import { channelParams, historyParams, type HistoryParams } from "./request.js";

/** The most publications one history answer holds (the native history door's bound). */
export const HISTORY_MAX_LIMIT = 1_000;

/**
 * `history`: stored messages of one channel, as `GET /v1/channels/{channel}/messages` reads them, through
 * the chain as a read using `history` (a key's `read` scope; the namespace's switch) and the read
 * allowances. Offsets are the stream's seqs (increasing, not consecutive per channel); `offset` is the
 * stream's last seq, `epoch` its epoch. `limit` 0 answers the position alone; `since` reads after an offset
 * (an epoch that is not the stream's answers 112); `reverse` reads the newest first.
 */
export async function history(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const p = historyParams(o, HISTORY_MAX_LIMIT);
  if ("error" in p) return badRequest(p.error);
  const refused = await refusedAccess(d.access, who, { right: "sub", channel: p.channel, uses: ["history"] });
  if (refused) return refused;
  if (!d.broker.replay) return fail(ApiCode.NotAvailable, `the ${d.broker.kind} broker keeps no history`);
  if (p.reverse && p.since)
    return fail(ApiCode.NotAvailable, "reverse with since (paging backwards from a position) is not available here: read forwards from since");
  const grant = d.reads?.take(who.identity.ip, readerOf(who.identity), Date.now(), true);
  if (grant && !grant.ok) return fail(ApiCode.TooManyRequests, readRefusalError(grant).message);
  try {
    return await read(d, p);
  } catch (e) {
    return { error: apiErrorOf(brokerFailure(e, d.broker.isConnected(), "history")) };
  } finally {
    grant?.release();
  }
}

async function read(d: ServerApiDeps, p: HistoryParams): Promise<Reply> {
  const replay = d.broker.replay;
  if (!replay) return fail(ApiCode.NotAvailable, "no history");
  const bounds = await replay.state(p.channel);
  if (p.since && p.since.epoch !== "" && p.since.epoch !== bounds.epoch)
    return fail(ApiCode.UnrecoverablePosition, `since.epoch ${p.since.epoch} is not the stream's (${bounds.epoch}): it was recreated`);
  const position = { offset: bounds.lastSeq, epoch: bounds.epoch };
  if (p.limit === 0) return { result: { publications: [], ...position } };
  const start = p.reverse ? await replay.startOfLastN(p.channel, p.limit) : Math.max(p.since ? p.since.offset + 1 : bounds.firstSeq, 1);
  const h = bounds.lastSeq >= start ? await replay.history(p.channel, start, p.limit, d.historyMaxBytes) : { messages: [], more: false };
  // Newest first: the newest `limit` were read oldest first; a byte bound that cut them (fewer than `limit`
  // read, more left) would leave the newest out. A full page with more after it met messages stored since.
  if (p.reverse && h.more && h.messages.length < p.limit)
    return fail(ApiCode.LimitExceeded, `the newest ${p.limit} publications are more than HISTORY_MAX_BYTES (${d.historyMaxBytes}): ask a smaller limit`);
  const publications = h.messages.map(publication);
  return { result: { publications: p.reverse ? publications.reverse() : publications, ...position } };
}

/**
 * A stored message as Centrifugo's publication: JSON data, text as a string, bytes in `b64data` (data null);
 * `info`, the publisher's ClientInfo, when a WebSocket client published it; `tags`, when it has some.
 */
function publication(m: BrokerMessage): Record<string, unknown> {
  const bytes = Buffer.from(m.payload.buffer, m.payload.byteOffset, m.payload.byteLength);
  const publisher = readPublisher(m.publisher);
  const tags = readStoredTags(m.tags);
  const info = { ...(publisher ? { info: publisher } : {}), ...(tags ? { tags } : {}) };
  if (m.type === undefined && isJsonPayload(m.payload)) return { data: JSON.parse(bytes.toString("utf8")) as unknown, ...info, offset: m.seq };
  return { data: null, b64data: bytes.toString("base64"), ...info, offset: m.seq };
}

/** `presence`: the channel's members (`GET /v1/channels/{channel}/presence`), keyed by client id. */
export async function presence(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const m = await members(d, who, o);
  if ("error" in m) return m;
  const presence: Record<string, unknown> = {};
  for (const x of m.members) presence[x.client] = { client: x.client, user: x.user ?? "", ...(x.info !== undefined ? { conn_info: x.info } : {}) };
  return { result: { presence } };
}

/** `presence_stats`: how many members and distinct users (of at most PRESENCE_MAX_MEMBERS listed). */
export async function presenceStats(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const m = await members(d, who, o);
  if ("error" in m) return m;
  return { result: { num_clients: m.members.length, num_users: new Set(m.members.map((x) => x.user ?? "")).size } };
}

async function members(d: ServerApiDeps, who: Caller, o: Record<string, unknown>) {
  const c = channelParams(o);
  if ("error" in c) return badRequest(c.error);
  const refused = await refusedAccess(d.access, who, { right: "sub", channel: c.channel, uses: ["presence"] });
  if (refused) return refused;
  if (!d.presence) return fail(ApiCode.NotAvailable, `the ${d.broker.kind} broker keeps no presence`);
  try {
    return await d.presence.members(c.channel);
  } catch (e) {
    return replyOfThrown(brokerFailure(e, d.broker.isConnected(), "presence"));
  }
}

/** `history_remove`: not available. A channel's history is its messages in the stream, which keeps them all (within its limits). */
export async function historyRemove(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const c = channelParams(o);
  if ("error" in c) return badRequest(c.error);
  const refused = await refusedAccess(d.access, who, { right: "sub", channel: c.channel, uses: ["history"] });
  if (refused) return refused;
  return fail(
    ApiCode.NotAvailable,
    "history_remove is not available: the channel's history is its messages in the stream, kept within the stream's limits (maxAge, messages per channel); nothing removes them on request",
  );
}
