import type { PublisherInfo } from "../protocol/publisher-info.js";
import type { StoredMsg } from "../protocol/server-frames.js";
import type { Tags } from "../protocol/tags.js";

/** What a publish stores with the message besides its payload (each in a header of its own). */
export type MessageExtra = { publisher?: PublisherInfo; tags?: Tags };

/**
 * One message as the fan-out path sees it: the channel, its stream sequence, broker time and raw payload;
 * `type` is a binary payload's content type (its `Fanout-Content-Type` header), absent for JSON; `publisher`
 * the WebSocket client that published it (its `Fanout-Publisher` header), absent for other publishes; `tags`
 * the publication's tags (`Fanout-Tags`), absent when none were given.
 */
export type BrokerMessage = StoredMsg;

export type PublishResult = { seq: number; duplicate: boolean };

/** A running delivery from the broker (a live feed, a durable consumer's pull). */
export interface Running {
  /** Stops delivery and releases broker resources. */
  stop(): Promise<void>;
}

/** A running live subscription of a worker to one channel pattern. */
export interface LiveFeed extends Running {
  /**
   * Where the feed is, and the one place that knows it: every matching message with a seq up to here has
   * been delivered, or is older than the feed (it started after it). Moves with each delivery; starts over
   * when the stream is recreated.
   */
  position(): number;
}

export type BrokerEvent =
  | { type: "connected" }
  | { type: "disconnected" }
  | { type: "reconnected" }
  | { type: "error"; error: unknown }
  /**
   * A stream was deleted and created again: its sequences start over, cached pages of its patterns are void.
   * `stream` names it (the default stream or a namespace's): the others are untouched.
   */
  | { type: "epoch"; epoch: string; stream: string };

/** The stream's bounds and epoch (its creation time: a recreated stream has a new one). */
export type StreamState = {
  firstSeq: number;
  lastSeq: number;
  epoch: string;
  /**
   * The first seq a resume or start may begin at, when the namespace has a resume window and messages older
   * than it are stored: a start before it begins here instead, reported truncated.
   */
  resumeFrom?: number;
  /**
   * Regions: the home region did not answer, and these bounds are this region's mirror's (with the epoch
   * last seen): a position past `lastSeq` may be real, held by the home region and not copied yet.
   */
  mirrorOnly?: true;
};

/** One stream as the shared pass over it sees it: its name, and a page of all of it (every subject). */
export type StreamScope = { name: string; read(from: number, target: number): Promise<StoredPage> };

/** Stored messages of a pattern: every matching message with seq in [from, coverEnd], in order. */
export type StoredPage = { messages: BrokerMessage[]; coverEnd: number };

/** Stored-message access: replay, history. Only brokers that keep messages have it. Creates nothing on the server. */
export interface ReplayApi {
  /**
   * Bounds and epoch of the stream holding `pattern` (each namespace has its own); concurrent callers share
   * one request sent after they asked. A pattern spanning streams is refused (`bad_channel`).
   */
  state(pattern: string): Promise<StreamState>;
  /** The stream holding `pattern`, for reads of all of it; without it the broker has one stream (read with `>`). */
  streamOf?(pattern: string): StreamScope;
  /** The sequence from which `pattern` has exactly its last `n` messages (or the first seq if fewer). */
  startOfLastN(pattern: string, n: number): Promise<number>;
  /** The first matching sequence at or after `time` (ISO 8601), or the stream's last seq + 1 when none. */
  seqAtTime(pattern: string, time: string): Promise<number>;
  /**
   * One page of `pattern` from `from`. `target` is a sequence the caller knows is stored (the live feed's
   * position): when the page ends at the stream's end, it covers at least up to `target`.
   */
  read(pattern: string, from: number, target: number): Promise<StoredPage>;
  /**
   * Up to `limit` stored messages of one channel from `fromSeq`; with `maxBytes`, no more payload than that
   * (the first message is always read, whatever its size). `more` says `limit` or the byte bound stopped it
   * short of matching messages stored after the last one read.
   */
  history(channel: string, fromSeq: number, limit: number, maxBytes?: number): Promise<{ messages: BrokerMessage[]; more: boolean }>;
  /**
   * History read backwards: the newest (at most `limit`) stored messages of one channel with a seq below
   * `before`, newest first; with `maxBytes`, no more payload than that beyond the newest one. `more` says
   * older messages remain: the next page is read with `before` = the seq of this page's oldest (last) one.
   */
  historyBack?(channel: string, before: number, limit: number, maxBytes?: number): Promise<{ messages: BrokerMessage[]; more: boolean }>;
  /**
   * One page of the newest stored message of every channel matching `pattern`, as of `upTo` (a message
   * stored later does not replace an older one here), in stream order, from seq `after + 1` on. `more` says
   * whether another page follows (ask again with `after` = the last seq of this page). A page holds at most
   * `bounds.maxMessages` messages and (beyond its first) `bounds.maxBytes` of payload, however many channels
   * match: the continuation is exact (no channel left out, none twice) because pages follow stream order.
   */
  lastPerSubject?(pattern: string, upTo: number, after: number, bounds?: PageBounds): Promise<LastValuePage>;
  /**
   * Regions: resolves once the stream holding `pattern` is read here up to `seq` (this region's mirror has
   * copied it, and so its live feed has passed it), waiting up to REGION_RESUME_WAIT; then fails temporary.
   * Absent where reads are the stream's own.
   */
  reach?(pattern: string, seq: number): Promise<void>;
}

/** The most one page may hold: messages, and payload bytes (a single larger message still makes a page). */
export type PageBounds = { maxMessages?: number; maxBytes?: number };

/**
 * A page of last values: `more` when another one follows, asked with `after` = `cursor` (when given: the
 * page may end past its last message, whose channels retention emptied meanwhile), else its last seq.
 */
export type LastValuePage = { messages: BrokerMessage[]; more: boolean; cursor?: number };

/** One delivery of a durable (acked) subscription. */
export type DurableDelivery = BrokerMessage & {
  redelivered: boolean;
  deliveries: number;
  ack(): void;
  nak(delayMs?: number): void;
  term(): void;
  /** Work in progress (`+WPI`): restarts the ack_wait timer, so the message is not redelivered yet. */
  working(): void;
};

export type DurableSpec = { user: string; durable: string; pattern: string; maxInflight: number };

export interface DurableApi {
  /** Binds to (creating if needed) the user's durable consumer and starts pulling up to maxInflight. */
  bind(spec: DurableSpec, onMessage: (d: DurableDelivery) => void): Promise<Running>;
}

/** One member of a channel's presence: the connection (client id), its user (JWT `sub`, null without auth) and info. */
export type PresenceMember = { client: string; user: string | null; info?: unknown; joinedAt: number };

/** The last record of one member key: a put (`member`), or a removal (`null`: leave, purge, TTL expiry). */
export type PresenceRecord = { client: string; seq: number; member: PresenceMember | null };

/**
 * Presence storage (JetStream KV bucket with per-entry TTL). Entries must be refreshed with `put` before the
 * TTL or they expire; an expiry is a removal record like a leave.
 */
export interface PresenceApi {
  /** Writes (or refreshes) a member's entry with the configured TTL. */
  put(channel: string, member: PresenceMember): Promise<void>;
  /**
   * Rewrites many entries (a new TTL) at the cost of a publish each: only the first is acknowledged (it
   * proves the bucket is there); resolves once the server has received them all (a flush).
   */
  refresh(entries: readonly { channel: string; member: PresenceMember }[]): Promise<void>;
  /** Removes a member's entry (its watchers see a removal record). */
  remove(channel: string, client: string): Promise<void>;
  /** Every member key's last record of the channel, removals included. */
  snapshot(channel: string): Promise<PresenceRecord[]>;
  /** Live records of the channel's keys, in stream order; resolves once subscribed. */
  watch(channel: string, onRecord: (r: PresenceRecord) => void): Promise<{ stop(): void }>;
}

/** A record of the cluster's shared state, as a watch of all of it delivers them (in the order written). */
export type SharedRecord =
  /** An instance's heartbeat was written (`alive`), or it expired or was deleted. */
  | { type: "heartbeat"; instance: string; alive: boolean }
  /** An instance holds `key` (a channel's subscribers, a user's presence: events/shared-keys.ts), or no longer. */
  | { type: "share"; key: string; instance: string; held: boolean }
  /** The leader announced `key` on (or off): `seq` is the record's, the same for every reader. */
  | { type: "announced"; key: string; on: boolean; seq: number };

/** Where a replay of the events webhook starts: an event's id (its stream sequence) or a time (the first event stored at or after it). */
export type ReplayFrom = { fromId: number } | { fromTime: string };

/** A lease's last record: its sequence and holder ("" once released). */
export type LeaseRecord = { seq: number; holder: string };

/**
 * Where a lease one instance holds at a time is kept (services/leader-lease.ts): one record that runs out
 * unless written again, each write conditional on the last one, so of two writers only one succeeds.
 * JetStream keeps the webhook sender's in a stream of its own (broker/jetstream/webhook-lease.ts) and the
 * cluster leader's in the shared state's bucket (`SharedStateApi.leaderLease`).
 */
export interface LeaseStore {
  /** The last record; undefined when there is none (never taken, or run out). */
  read(): Promise<LeaseRecord | undefined>;
  /** Writes `holder` if the last record is still the one at `after` (0: none); the new record's sequence, or undefined when another wrote first. */
  write(holder: string, after: number): Promise<number | undefined>;
}

/** Where the cluster's shared state is kept: its bucket, how long a heartbeat (and the leader's lease) lasts unless renewed, replicas and storage. */
export type SharedStateSettings = { bucket: string; ttlMs: number; replicas: number; storage: "file" | "memory"; homeRegion?: string };

/**
 * What the services beside the workers need of the broker (services/, docs/architecture.md, "a
 * once-per-deployment service"): each instance's heartbeat, which expires when the instance stops refreshing
 * it (a crash), and its shares, written under it; and one watch of all of it at once, every channel's and
 * every instance's, not one channel's. JetStream implements it with a KV bucket and per-key TTL
 * (broker/jetstream/shared-state.ts), which also keeps the leader's lease.
 */
export interface SharedStateApi {
  /**
   * Writes or refreshes the instance's heartbeat (it expires after the TTL unless refreshed): `renewed`
   * when it had expired meanwhile, or this is the first: the leader dropped the instance's shares, write them again.
   */
  heartbeat(instance: string): Promise<"kept" | "renewed">;
  /** Writes (`held`) or deletes the instance's share of `key`. */
  share(key: string, instance: string, held: boolean): Promise<void>;
  /** Deletes shares of instances whose heartbeat expired (the leader tidies up after them). */
  forget(shares: readonly { key: string; instance: string }[]): Promise<void>;
  /** A clean stop: deletes the heartbeat (the leader drops the instance's shares at once). */
  resign(instance: string): Promise<void>;
  /** Records that `key` was announced on (or off); resolves with the record's seq. */
  announce(key: string, on: boolean): Promise<number>;
  /**
   * Every record there is now (the last of each key), then every change as it is written; `onSynced` once
   * the records there were at the start are all delivered. Resolves once the watch is set up; `onLost`
   * when it ends by itself (the bucket was deleted, say): watch again, from the start.
   */
  watch(onRecord: (r: SharedRecord) => void, onSynced: () => void, onLost: (e: unknown) => void): Promise<{ stop(): void }>;
  /**
   * The cluster leader's lease (services/leader-lease.ts): each write runs out after the TTL unless written
   * again; a run-out or released lease reads as free.
   */
  leaderLease(): LeaseStore;
}

/**
 * Request and reply between processes over the broker (the control plane's transport). Plain messages, no
 * storage: a request reaches the subscribers connected at that moment.
 */
export interface Bus {
  /**
   * Answers requests on `subject`. Without `queue` every subscriber (every worker of every instance) gets
   * each request; with it, one subscriber of the group does. `answer` returns the reply's body.
   */
  serve(subject: string, answer: (body: Uint8Array) => Promise<Uint8Array>, queue?: string): void;
  /** Sends one request to every subscriber of `subject`; `onReply` sees each reply until `stop()`. */
  scatter(subject: string, body: Uint8Array, onReply: (body: Uint8Array) => void): { stop(): void };
  /** One request, one reply (a queue group answers); rejects after `timeoutMs` or when nobody listens. */
  request(subject: string, body: Uint8Array, timeoutMs: number): Promise<Uint8Array>;
}

/** What the fan-out, WebSocket and HTTP layers need from a broker (JetStream, or Redis pub/sub as a baseline). */
export interface Broker {
  readonly kind: "jetstream" | "redis";
  /** Present when the broker stores messages (JetStream). */
  readonly replay?: ReplayApi;
  /** Present when the broker has acked durable consumers (JetStream). */
  readonly durables?: DurableApi;
  /** Present when the broker keeps presence (JetStream). */
  readonly presence?: PresenceApi;
  /** Present when the broker carries requests between processes (JetStream: core NATS). */
  readonly bus?: Bus;
  /**
   * The epoch (creation time) of the stream holding `pattern`, when known: `ok` frames carry it so clients
   * keep it with their seq. Undefined for a broker without streams.
   */
  epochOf(pattern: string): string | undefined;
  /**
   * `epochOf(pattern)` as a function that routes the pattern once: for what reads the epoch per message (an
   * SSE stream's ids), where routing it again each time would cost a namespace lookup per message.
   */
  epochReader(pattern: string): () => string | undefined;
  /** True while the broker connection is up. */
  isConnected(): boolean;
  /** True while the worker's own direct-get connection is up (JetStream with REPLAY_CONNECTION=own). */
  directLinkUp?(): boolean;
  /**
   * `ttl` (`Nats-TTL` form, `30s`): the message expires from the stream then; only where its stream allows it.
   * `type`: the payload is bytes of this content type (stored in `Fanout-Content-Type`), not JSON.
   * `extra`: what else is stored with the message: the WebSocket client publishing (`Fanout-Publisher`,
   * protocol/publisher-info.ts) and the publication's tags (`Fanout-Tags`, protocol/tags.ts).
   */
  publish(channel: string, payload: Uint8Array, msgId?: string, ttl?: string, type?: string, extra?: MessageExtra): Promise<PublishResult>;
  /**
   * Stores one gateway event (JSON text, events/recorder.ts) under `subject` in the events stream; resolves
   * with its stream sequence, the event's id. JetStream only: the Redis baseline has no stream for them.
   */
  appendEvent?(subject: string, json: string): Promise<number>;
  /** Sends the events webhook again from an id or a time (POST /v1/server/events/replay). JetStream only. */
  replayEvents?(stream: string, from: ReplayFrom): Promise<{ pending: number } | { refused: string }>;
  /** Starts live delivery of every new message on `pattern`; resolves once delivery is set up. */
  live(pattern: string, onMessage: (m: BrokerMessage) => void): Promise<LiveFeed>;
  onEvent(listener: (e: BrokerEvent) => void): void;
  /** Drains and closes the connection. */
  close(): Promise<void>;
}
