import type { ErrorCode } from "./codes.js";
import type { Id } from "./frames.js";
import type { StoredPublisher } from "./publisher-info.js";
import type { StoredTags } from "./tags.js";

/**
 * Every frame the server sends, as values: the shapes of the wire protocol in one place (PROTOCOL.md
 * describes them). Each codec (protocol/codecs.ts) encodes these values its own way; the JSON codec writes
 * the bytes fanout.v1 always had. `msg` frames are the hot path and are not values: a codec builds them from
 * a message's metadata and stored payload bytes (`Codec.msg`), once per message per worker.
 */
export type ServerFrame =
  | OkFrameOut
  | ErrFrameOut
  | { op: "pong"; id?: Id; /** ms since the epoch, µs decimals */ time: number }
  /**
   * The server ended a subscription: an operator's `unsubscribe`, or (`code` `subscription_expired`) the
   * subscription token that granted it expired with no `sub_refresh`.
   */
  | { op: "unsub"; channel: string; reason: string; code?: ErrorCode }
  /** A catch-up joined live delivery after `seq`. */
  | { op: "live"; sub: string; seq: number }
  /** A server-side subscription (`channels.auto`): every matching message after `seq` follows. */
  | { op: "sub"; channel: string; auto: true; seq: number; epoch?: string }
  /** A presence member joined or left a channel. */
  | { op: "join" | "leave"; channel: string; client: string; user: string | null; info?: unknown }
  /** The answer to a `presence` request. */
  | { op: "presence"; id?: Id; channel: string; members: readonly MemberOut[]; truncated: boolean };

/** A presence member as frames list it (the broker's `PresenceMember`). */
export type MemberOut = { client: string; user: string | null; info?: unknown; joinedAt: number };

/** `ok`: the answer to a request; `fields` are its results in order (undefined ones are left out). */
export type OkFrameOut = { op: "ok"; id?: Id; fields?: Readonly<Record<string, unknown>> };
/** `err`: `temporary` says whether retrying can help; `appCode` is an `rpc_error`'s code from the backend. */
export type ErrFrameOut = { op: "err"; id?: Id; code: ErrorCode; message: string; temporary: boolean; appCode?: string };

/** A `msg` frame's metadata: the message's channel, the subscription's pattern, its position and time. */
export type MsgMeta = {
  channel: string;
  pattern: string;
  seq: number;
  ts: number;
  /** The content type of a binary payload (`Fanout-Content-Type`); absent for JSON. */
  type?: string;
  /** The WebSocket client that published it (`Fanout-Publisher`): the Centrifuge door's publication `info`. */
  publisher?: StoredPublisher;
  /** The publication's tags (`Fanout-Tags`): the Centrifuge door's publication `tags`. */
  tags?: StoredTags;
  /** A durable subscription's delivery: its name, and whether (and how often) it was delivered before. */
  durable?: { name: string; redelivered?: boolean; deliveries?: number };
};

/** A stored message as codecs build pages of `msg` frames from it. */
export type StoredMsg = {
  channel: string;
  seq: number;
  ts: number;
  payload: Uint8Array;
  /** A binary payload's content type. */
  type?: string;
  /** Its publisher, when a WebSocket client published it. */
  publisher?: StoredPublisher;
  /** Its tags, when the server API's publish gave some. */
  tags?: StoredTags;
};

/** The server's clock for `pong`: ms since the epoch with µs decimals. */
export const serverTime = (): number => performance.timeOrigin + performance.now();
