import { isUtf8 } from "node:buffer";
import type { Codec } from "../codec.js";
import { ErrorCode } from "../codes.js";
import { jsonNestsDeeper, TOO_DEEP } from "../depth.js";
import type { Decoded } from "../frames.js";
import { mayHoldHugeNumber } from "../json-numbers.js";
import { isJsonPayload, joinLines } from "../serialize.js";
import type { MsgMeta, ServerFrame, StoredMsg } from "../server-frames.js";
import { toCentrifugoChannel } from "../centrifugo-channels.js";
import { clientErrorOf, disconnectForUnsolicited, disconnectOf, reconnects, unsubscribeOf } from "./codes.js";
import { requestOf, type Request } from "./requests.js";

/**
 * The Centrifuge client protocol's JSON format on this gateway's codec seam: commands and replies are JSON
 * objects separated by `\n`, several to a WebSocket text frame both ways. Publications are `msg` frames to the
 * codec seam: each one is written once per worker for every socket of this door (fanout/hub.ts), never per
 * socket. The shapes of every reply and push are here, in one place.
 */

/** The most commands one frame may carry: a frame with more is refused whole (`bad_request`). */
export const MAX_COMMANDS_PER_FRAME = 256;

/** Centrifuge's name for a channel of this gateway: the reverse of the name mapping, or the channel as it is. */
export function clientChannel(channel: string): string {
  const m = toCentrifugoChannel(channel);
  return m.ok ? m.name : channel;
}

/**
 * A frame's commands, each a JSON value not yet validated (centrifugo/client/commands.ts does), in order. Blank
 * lines are skipped; a line that is not JSON refuses the whole frame, as does one nested too deep.
 */
export function decodeCommands(text: string): Decoded {
  const lines = text.split("\n").filter((l) => l.trim().length > 0);
  if (lines.length > MAX_COMMANDS_PER_FRAME)
    return { ok: false, code: ErrorCode.BadRequest, message: `a frame carries at most ${MAX_COMMANDS_PER_FRAME} commands (this one ${lines.length})` };
  const value: unknown[] = [];
  let mayNotFitJson = false;
  for (const line of lines) {
    if (jsonNestsDeeper(line)) return { ok: false, code: ErrorCode.BadRequest, message: TOO_DEEP };
    try {
      value.push(JSON.parse(line));
    } catch {
      return { ok: false, code: ErrorCode.BadJson, message: "a command is not valid JSON" };
    }
    mayNotFitJson ||= mayHoldHugeNumber(line);
  }
  return { ok: true, value, mayNotFitJson };
}

/** A publication push's data: JSON as stored (verbatim), other text as a JSON string, other bytes base64 in a string. */
function dataOf(payload: Uint8Array, type: string | undefined): Buffer {
  const bytes = Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  if (type === undefined && isJsonPayload(payload)) return bytes;
  if (type === undefined && isUtf8(bytes)) return Buffer.from(JSON.stringify(bytes.toString("utf8")));
  return Buffer.from(`"${bytes.toString("base64")}"`);
}

/** `{"push":{"channel":…,"pub":{"data":…,"offset":seq}}}`: one allocation around the stored payload. */
export function publicationPush(meta: MsgMeta, payload: Uint8Array): Buffer {
  const head = Buffer.from(`{"push":{"channel":${JSON.stringify(clientChannel(meta.channel))},"pub":{"data":`);
  const tail = Buffer.from(`,"offset":${meta.seq}}}}`);
  return Buffer.concat([head, dataOf(payload, meta.type), tail]);
}

/** An `ok` in the shape of the reply to the command it answers. */
function okReply(r: Request, fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  switch (r.kind) {
    case "subscribe":
      return { subscribe: subscribeResult(r, fields) };
    case "unsubscribe":
      return { unsubscribe: {} };
    case "publish":
      return { publish: {} };
    case "rpc":
      return { rpc: fields.data === undefined || fields.data === null ? {} : { data: fields.data } };
    case "refresh":
      return { refresh: expiry(fields.exp) };
    case "sub_refresh":
      return { sub_refresh: expiry(fields.exp) };
  }
}

/** When a token's `exp` (unix seconds) tells the SDK to refresh it: `expires` and the seconds left (`ttl`). */
const expiry = (exp: unknown): { expires?: true; ttl?: number } =>
  typeof exp === "number" ? { expires: true, ttl: Math.max(0, Math.floor(exp - Date.now() / 1000)) } : {};

/**
 * A subscribe's result. A positioned or recovering subscription is told the stream's epoch and its offset:
 * the one publications follow from (for a recovery, the client's own: every publication after it follows as
 * pushes, through the resume path's catch-up). A stream recreated, or trimmed, between the door's look at
 * it and the subscription's start (fields `epochChanged`, `truncated`) is not recovered: delivery starts at
 * the stream's first message.
 */
function subscribeResult(r: Extract<Request, { kind: "subscribe" }>, fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (r.mode !== "live") {
    const raced = fields.truncated === true || fields.epochChanged === true;
    const first = typeof fields.firstSeq === "number" ? fields.firstSeq : 1;
    out.recoverable = true;
    out.positioned = true;
    out.epoch = fields.epoch;
    out.offset = raced ? Math.max(0, first - 1) : r.offset;
    if (r.mode === "recovered" || r.mode === "unrecovered") out.was_recovering = true;
    if (r.mode === "recovered" && !raced) out.recovered = true;
  }
  if (fields.data !== undefined) out.data = fields.data;
  // A subscription token's expiry: the SDK sends `sub_refresh` with a new one before it.
  return { ...out, ...expiry(fields.exp) };
}

/** A join or leave push's client: its id, user ("" for none) and the info it entered with. */
const clientInfo = (f: { client: string; user: string | null; info?: unknown }) => ({
  client: f.client,
  user: f.user ?? "",
  ...(f.info !== undefined ? { conn_info: f.info } : {}),
});

/** A `disconnect` push: the SDK closes and, when the code says so, reconnects and recovers. */
export const disconnectPush = (code: number, reason: string): string => JSON.stringify({ push: { disconnect: { code, reason, reconnect: reconnects(code) } } });

/**
 * A server frame as a reply or push; "" for the frames the protocol has no counterpart of (a catch-up's
 * `live`, which the door's sockets skip).
 */
export function encodeFrame(f: ServerFrame): string {
  switch (f.op) {
    case "ok": {
      const r = requestOf(f.id);
      return r ? JSON.stringify({ id: r.id, ...okReply(r, f.fields ?? {}) }) : "";
    }
    case "err": {
      const r = requestOf(f.id);
      if (r) return JSON.stringify({ id: r.id, error: clientErrorOf(f.code, f.message, f.temporary) });
      return disconnectPush(disconnectForUnsolicited(f.code, f.temporary), `${f.code}: ${f.message}`.slice(0, 100));
    }
    case "unsub":
      return JSON.stringify({ push: { channel: clientChannel(f.channel), unsubscribe: unsubscribeOf(f.code, f.reason) } });
    case "join":
    case "leave":
      return JSON.stringify({ push: { channel: clientChannel(f.channel), [f.op]: { info: clientInfo(f) } } });
    case "live":
    case "pong":
    case "sub":
    case "presence":
      return "";
  }
}

/** Centrifuge's JSON format as a codec (protocol/codecs.ts): selected by the door's endpoint, never by a /ws subprotocol. */
export const CENTRIFUGE_JSON_CODEC: Codec = {
  name: "centrifuge-json",
  // Centrifuge's JSON clients offer no subprotocol; this name is not among /ws's (protocol/subprotocol.ts), so /ws never selects it.
  subprotocol: "centrifuge-json",
  binary: false,
  slot: 2,
  decode: (data, isBinary) =>
    isBinary ? { ok: false, code: ErrorCode.BadJson, message: "JSON commands come in text frames" } : decodeCommands(Buffer.from(data).toString("utf8")),
  encode: encodeFrame,
  msg: publicationPush,
  // The door never asks for deltas (it answers a subscribe's `delta` without `delta: true`): with them, Centrifuge's
  // JSON format sends every publication's data as a string, which the shared full frames are not.
  delta: () => {
    throw new Error("deltas are not negotiated on the Centrifuge door");
  },
  msgs: (pattern: string, messages: readonly StoredMsg[]) =>
    messages.map((m) => publicationPush({ channel: m.channel, pattern, seq: m.seq, ts: m.ts, ...(m.type !== undefined ? { type: m.type } : {}) }, m.payload)),
  batch: joinLines,
  closeCode: disconnectOf,
};
