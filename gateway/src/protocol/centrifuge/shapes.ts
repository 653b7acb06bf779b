import type { Codec } from "../codec.js";
import type { MsgMeta, ServerFrame, StoredMsg } from "../server-frames.js";
import { toCentrifugoChannel } from "../centrifugo-channels.js";
import { clientErrorOf, disconnectForUnsolicited, reconnects, unsubscribeOf, type ClientErrorOut } from "./codes.js";
import { requestOf, type Request } from "./requests.js";
import { readPublisher } from "../publisher-info.js";
import { readStoredTags } from "../tags.js";

/**
 * The replies and pushes of the Centrifuge client protocol (v2) as plain objects with the protocol's field
 * names, apart from any encoding: json.ts writes them as JSON lines, protobuf.ts as length-prefixed Protobuf,
 * from the same objects. `data`, `info`, `conn_info` and `chan_info` hold JSON values (a Protobuf encoder
 * writes them as JSON bytes), or `Stored` for a payload as the stream holds it.
 */

/** A payload as stored: JSON text (no `type`), or bytes of content type `type`. Each format writes it its own way. */
export class Stored {
  constructor(
    readonly payload: Uint8Array,
    readonly type?: string,
  ) {}
}

export type ClientInfo = { user: string; client: string; conn_info?: unknown; chan_info?: unknown };

export type Publication = {
  data: unknown;
  /** A server API read's bytes as base64 (data null): JSON keeps it, Protobuf writes the bytes as `data`. */
  b64data?: string;
  info?: ClientInfo;
  offset?: number;
  tags?: Readonly<Record<string, string>>;
  delta?: boolean;
  time?: number;
  channel?: string;
};

export type SubscribeResult = {
  expires?: boolean;
  ttl?: number;
  recoverable?: boolean;
  epoch?: string;
  publications?: readonly Publication[];
  recovered?: boolean;
  offset?: number;
  positioned?: boolean;
  data?: unknown;
  was_recovering?: boolean;
  delta?: boolean;
};

export type ConnectResult = {
  client: string;
  version: string;
  expires?: boolean;
  ttl?: number;
  data?: unknown;
  subs?: Readonly<Record<string, SubscribeResult>>;
  ping?: number;
  pong?: boolean;
  session?: string;
  node?: string;
  time?: number;
};

export type RefreshResult = { client?: string; version?: string; expires?: boolean; ttl?: number };

/** A server-side subscription announced after connect (push `subscribe`). */
export type SubscribePush = { recoverable?: boolean; epoch?: string; offset?: number; positioned?: boolean; data?: unknown };

/** A push: `channel` and one of the others. */
export type Push = {
  channel?: string;
  pub?: Publication;
  join?: { info: ClientInfo };
  leave?: { info: ClientInfo };
  unsubscribe?: { code: number; reason: string };
  message?: { data: unknown };
  subscribe?: SubscribePush;
  connect?: ConnectResult;
  disconnect?: { code: number; reason: string; reconnect: boolean };
  refresh?: { expires?: boolean; ttl?: number };
};

/** A reply: `id` with `error` or one result, or a push (no id); the empty reply is the server's ping. */
export type Reply = {
  id?: number;
  error?: ClientErrorOut;
  push?: Push;
  connect?: ConnectResult;
  subscribe?: SubscribeResult;
  unsubscribe?: Record<string, never>;
  publish?: Record<string, never>;
  presence?: { presence: Readonly<Record<string, ClientInfo>> };
  presence_stats?: { num_clients: number; num_users: number };
  history?: { publications: readonly Publication[]; epoch?: string; offset?: number };
  ping?: Record<string, never>;
  rpc?: { data?: unknown };
  refresh?: RefreshResult;
  sub_refresh?: { expires?: boolean; ttl?: number };
};

/** A codec of the Centrifuge door: the codec seam's, and its replies and pushes as frames. */
export interface CentrifugeCodec extends Codec {
  /** A reply or push as one frame (what `batch` joins). */
  reply(r: Reply): string | Uint8Array;
}

/** Centrifuge's name for a channel of this gateway: the reverse of the name mapping, or the channel as it is. */
export function clientChannel(channel: string): string {
  const m = toCentrifugoChannel(channel);
  return m.ok ? m.name : channel;
}

/** A publication push of a stored payload, with its publisher as `info` when a WebSocket client published it, and its tags. */
export const publicationReply = (meta: MsgMeta, payload: Uint8Array): Reply => {
  const info = readPublisher(meta.publisher);
  const tags = readStoredTags(meta.tags);
  const pub: Publication = { data: new Stored(payload, meta.type), ...(info ? { info } : {}), offset: meta.seq, ...(tags ? { tags } : {}) };
  return { push: { channel: clientChannel(meta.channel), pub } };
};

/** A stored message as the codec seam's `msg` takes it: its meta (with `pattern`) and payload. */
export const metaOf = (pattern: string, m: StoredMsg): MsgMeta => {
  const meta: MsgMeta = { channel: m.channel, pattern, seq: m.seq, ts: m.ts };
  if (m.type !== undefined) meta.type = m.type;
  if (m.publisher !== undefined) meta.publisher = m.publisher;
  if (m.tags !== undefined) meta.tags = m.tags;
  return meta;
};

/** A `disconnect` push: the SDK closes and, when the code says so, reconnects and recovers. */
export const disconnectReply = (code: number, reason: string): Reply => ({ push: { disconnect: { code, reason, reconnect: reconnects(code) } } });

/** The seconds left until `exp` (epoch seconds), never below 0. */
export const ttlOf = (exp: number): number => Math.max(0, Math.floor(exp - Date.now() / 1000));

/** An `ok` in the shape of the reply to the command it answers. */
function okReply(r: Request, fields: Readonly<Record<string, unknown>>): Reply {
  switch (r.kind) {
    case "subscribe":
      return { id: r.id, subscribe: subscribeResult(r, fields) };
    case "unsubscribe":
      return { id: r.id, unsubscribe: {} };
    case "publish":
      return { id: r.id, publish: {} };
    case "rpc":
      return { id: r.id, rpc: fields.data === undefined || fields.data === null ? {} : { data: fields.data } };
    case "refresh":
      return { id: r.id, refresh: expiry(fields.exp) };
    case "sub_refresh":
      return { id: r.id, sub_refresh: expiry(fields.exp) };
    case "server_sub":
      return {};
  }
}

/** When a token's `exp` (unix seconds) tells the SDK to refresh it: `expires` and the seconds left (`ttl`). */
const expiry = (exp: unknown): { expires?: true; ttl?: number } => (typeof exp === "number" ? { expires: true, ttl: ttlOf(exp) } : {});

/**
 * A subscribe's result. A positioned or recovering subscription is told the stream's epoch and its offset:
 * the one publications follow from (for a recovery, the client's own: every publication after it follows as
 * pushes, through the resume path's catch-up). A stream recreated, or trimmed, between the door's look at
 * it and the subscription's start (fields `epochChanged`, `truncated`) is not recovered: delivery starts at
 * the stream's first message.
 */
function subscribeResult(r: Extract<Request, { kind: "subscribe" }>, fields: Readonly<Record<string, unknown>>): SubscribeResult {
  const out: SubscribeResult = {};
  if (r.mode !== "live") {
    const raced = fields.truncated === true || fields.epochChanged === true;
    const first = typeof fields.firstSeq === "number" ? fields.firstSeq : 1;
    out.recoverable = true;
    out.positioned = true;
    out.epoch = fields.epoch as string;
    out.offset = raced ? Math.max(0, first - 1) : r.offset;
    if (r.mode === "recovered" || r.mode === "unrecovered") out.was_recovering = true;
    if (r.mode === "recovered" && !raced) out.recovered = true;
  }
  if (fields.data !== undefined) out.data = fields.data;
  if (fields.delta === "fossil") out.delta = true;
  // A subscription token's expiry: the SDK sends `sub_refresh` with a new one before it.
  return { ...out, ...expiry(fields.exp) };
}

/** A join or leave push's client: its id, user ("" for none) and the info it entered with. */
const clientInfo = (f: { client: string; user: string | null; info?: unknown }): ClientInfo => ({
  client: f.client,
  user: f.user ?? "",
  ...(f.info !== undefined ? { conn_info: f.info } : {}),
});

/**
 * A server frame as a reply or push; undefined for the frames the protocol has no counterpart of (a catch-up's
 * `live`, which the door's sockets skip).
 */
export function replyOfFrame(f: ServerFrame): Reply | undefined {
  switch (f.op) {
    case "ok": {
      const r = requestOf(f.id);
      return r && r.kind !== "server_sub" ? okReply(r, f.fields ?? {}) : undefined;
    }
    case "err": {
      const r = requestOf(f.id);
      if (r && r.kind !== "server_sub") return { id: r.id, error: clientErrorOf(f.code, f.message, f.temporary) };
      return disconnectReply(disconnectForUnsolicited(f.code, f.temporary), `${f.code}: ${f.message}`.slice(0, 100));
    }
    case "unsub":
      return { push: { channel: clientChannel(f.channel), unsubscribe: unsubscribeOf(f.code, f.reason) } };
    case "join":
      return { push: { channel: clientChannel(f.channel), join: { info: clientInfo(f) } } };
    case "leave":
      return { push: { channel: clientChannel(f.channel), leave: { info: clientInfo(f) } } };
    case "sub":
      // A subscription the server added to the live connection: the SDK's client-level `subscribed`, then its publications.
      return { push: { channel: clientChannel(f.channel), subscribe: f.epoch ? { recoverable: true, positioned: true, epoch: f.epoch, offset: f.seq } : {} } };
    case "live":
    case "pong":
    case "presence":
      return undefined;
  }
}
