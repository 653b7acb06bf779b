import type { GatewayError } from "./errors.js";

/** The part of the WebSocket API the client uses: the browser's WebSocket, React Native's and `ws` all fit. */
export interface WebSocketLike {
  readonly readyState: number;
  // `any` keeps both DOM's (this: WebSocket, ev: CloseEvent) handlers and ws' handler types assignable.
  /* eslint-disable @typescript-eslint/no-explicit-any */
  onopen: ((ev: any) => void) | null;
  onclose: ((ev: any) => void) | null;
  onmessage: ((ev: any) => void) | null;
  onerror: ((ev: any) => void) | null;
  /* eslint-enable @typescript-eslint/no-explicit-any */
  send(data: string | Uint8Array): void;
  /** Set to "arraybuffer" when the wire is binary (fanout.v1.msgpack). */
  binaryType?: string;
  close(code?: number, reason?: string): void;
}
export type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocketLike;

/**
 * Where a subscription starts (PROTOCOL.md `sub`): live when omitted. `"last_per_subject"`: the newest message
 * of every matching channel, then live (current prices, device states, document heads).
 */
export type StartPosition = { seq: number } | { time: string | Date } | { last: number } | "all" | "last_per_subject";

export interface SubscribeOptions {
  /** Start position of the first subscribe; later resubscribes resume from the last delivered seq + 1. */
  from?: StartPosition;
  /** Durable consumer name (at-least-once; `from` is not allowed with it). */
  durable?: string;
  /** Explicit acks for a durable: messages get working ack()/nak()/term(). */
  ack?: boolean;
  /** Ack after the handler returns (awaited if it returns a promise), nak if it throws. Default: `ack`. */
  autoAck?: boolean;
  maxInflight?: number;
  /**
   * Presence of a concrete channel (not with `durable`): `true` enters its members and receives its joins and
   * leaves, `"member"` enters without receiving them, `"watch"` receives them without entering.
   */
  presence?: boolean | "member" | "watch";
  /** With `presence` true or "member": shown to the other members with this one (any JSON, at most 1 KiB). */
  info?: unknown;
  /** With `presence` true or "watch": called for every join and leave of the channel (its own join too). */
  onPresence?: (e: PresenceEvent) => void;
  /**
   * `"fossil"`: after each channel's first message the server may send Fossil deltas against the previous
   * one (PROTOCOL.md "Deltas"); the SDK applies them and the handler sees whole messages. Not with `durable`.
   */
  delta?: "fossil";
}

/** A presence member (PROTOCOL.md `presence`): a connection, its user (null without auth) and its info. */
export type PresenceMember = { client: string; user: string | null; info?: unknown; joinedAt: number };
/** A join or leave of a channel the subscription is present in. */
export type PresenceEvent = { type: "join" | "leave"; channel: string; client: string; user: string | null; info?: unknown };
/** The members of a channel; `truncated` when there were more than the server's bound. */
export type PresenceList = { members: PresenceMember[]; truncated: boolean };

/** A delivered message. ack/nak/term do something only on `ack:true` subscriptions. */
export interface GatewayMessage<T = unknown> {
  readonly channel: string;
  /** The pattern of the subscription it is for. */
  readonly sub: string;
  readonly seq: number;
  /** Broker timestamp, ms since the epoch (µs precision). */
  readonly ts: number;
  readonly data: T;
  /**
   * A payload that is not JSON: a string (`text`), base64 of bytes (`base64`, fanout.v1) or bytes (`binary`,
   * fanout.v1.msgpack). A binary payload (one with a `type`) is always `binary`: `data` is a Uint8Array.
   */
  readonly enc?: "text" | "base64" | "binary";
  /** A binary payload's content type (`application/octet-stream`, `image/png` …); `data` is then its bytes. */
  readonly type?: string;
  readonly durable?: string;
  readonly redelivered?: boolean;
  readonly deliveries?: number;
  ack(): void;
  nak(delayMs?: number): void;
  term(): void;
  /**
   * Work in progress: the server restarts the message's ack_wait, so it is not redelivered while the handler
   * still works on it. Call it more often than the gateway's DURABLE_ACK_WAIT; no-op once settled.
   */
  inProgress(): void;
}

export type MessageHandler<T = unknown> = (msg: GatewayMessage<T>) => void | Promise<void>;

/** The server's `ok` to a subscribe: stream bounds, and `truncated` when the start was already removed. */
export type SubscribeInfo = { firstSeq?: number; lastSeq?: number; truncated?: boolean; epoch?: string; epochChanged?: boolean; client?: string };

export interface Subscription {
  readonly channel: string;
  /** Last seq delivered to the handler (0: none yet). */
  readonly lastSeq: number;
  /** Settles with the first `ok` (or rejects with the `err`). */
  readonly ready: Promise<SubscribeInfo>;
  /** With `presence`: this connection's client id in the channel's presence (a new one after a reconnect). */
  readonly client?: string;
  unsubscribe(): void;
}

/**
 * Which stored messages `history` reads: the newest `last`, or at most `limit` (default 100, at most 1,000)
 * from stream seq `fromSeq` on; with `reverse`, at most `limit` newest first, below `beforeSeq` (default:
 * from the newest).
 */
export type HistoryOptions = { last?: number; fromSeq?: number; limit?: number; reverse?: boolean; beforeSeq?: number };
/**
 * A stored message as a history read returns it, its payload as a live message's: JSON parsed; `enc: "text"`
 * a string; a binary payload (one with a `type`) `enc: "binary"` and `data` a Uint8Array.
 */
export type HistoryMessage = { seq: number; ts: number; channel: string; data: unknown; enc?: "text" | "base64" | "binary"; type?: string };
/**
 * One page of history, oldest first (newest first with `reverse`). `next`, when the page stopped before the
 * channel's end (by `limit` or the server's size bound), is the `fromSeq` to read the rest with — with
 * `reverse`, the `beforeSeq` of the older page. Without `next` the page reached the end (the start).
 */
export type HistoryPage = { messages: HistoryMessage[]; firstSeq?: number; lastSeq?: number; next?: number };

export type PublishResult = { seq: number; duplicate: boolean };
/**
 * One item of `publishBatch`: as `publish`'s arguments (bytes as a Uint8Array, with `type`). `ttl` ("30s"): the message expires from the stream
 * then (a namespace with allowMsgTtl; elsewhere the item gets `feature_disabled`).
 */
export type BatchItem = { channel: string; data: unknown; msgId?: string; ttl?: string; type?: string };
/** One item's outcome in a batch, in the item's place: stored, or the server's error for that item alone. */
export type BatchItemResult = PublishResult | { error: GatewayError };

/** A frame as parsed from the wire. */
export type Frame = Record<string, unknown> & { op: string; id?: unknown };
