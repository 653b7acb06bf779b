/** One message as the fan-out path sees it: the channel, its stream sequence, broker time and raw payload. */
export type BrokerMessage = { channel: string; seq: number; ts: number; payload: Uint8Array };

export type PublishResult = { seq: number; duplicate: boolean };

/** A running live subscription of a worker to one channel pattern. */
export interface LiveFeed {
  /** Stops delivery and releases broker resources. */
  stop(): Promise<void>;
  /** For stored streams: every message with seq <= startAfter is older than this feed (it starts after it). */
  readonly startAfter?: number;
}

export type BrokerEvent =
  | { type: "connected" }
  | { type: "disconnected" }
  | { type: "reconnected" }
  | { type: "error"; error: unknown };

export type BrokerCapabilities = { replay: boolean; durable: boolean; history: boolean };

/** Where a replay starts; `last: N` is resolved to a sequence by `ReplayApi.startOfLastN`. */
export type ReaderPosition = { seq: number } | { time: string } | "all";

export type StreamBounds = { firstSeq: number; lastSeq: number };

/** A short-lived per-socket reader (catch-up). */
export interface Reader {
  /** Matching messages at and after the start position when the reader was created. */
  readonly initialPending: number;
  /** Stops asking the broker for more; what was already requested still arrives (a bounded window). */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export type ReaderHandlers = {
  /** Each message in order; `pending` is how many matching messages followed it when it was sent. */
  onMessage(m: BrokerMessage, pending: number): void;
  /** The reader broke (consumer gone, sequence gap) and is stopped: reopen after the last message taken. */
  onLost(err: Error): void;
};

/** Stored-message access: replay, history. Only brokers that keep messages have it. */
export interface ReplayApi {
  bounds(): Promise<StreamBounds>;
  /** The sequence from which `pattern` has exactly its last `n` messages (or the first seq if fewer). */
  startOfLastN(pattern: string, n: number): Promise<number>;
  /** Reads `pattern` in order from `position`, at most `windowBytes` requested ahead of what was delivered. */
  reader(pattern: string, position: ReaderPosition, windowBytes: number, handlers: ReaderHandlers): Promise<Reader>;
  /** Up to `limit` stored messages of one channel from `fromSeq`. */
  history(channel: string, fromSeq: number, limit: number): Promise<BrokerMessage[]>;
}

/** One delivery of a durable (acked) subscription. */
export type DurableDelivery = BrokerMessage & {
  redelivered: boolean;
  deliveries: number;
  ack(): void;
  nak(delayMs?: number): void;
  term(): void;
};

export type DurableSpec = { user: string; durable: string; pattern: string; maxInflight: number };

export interface DurableApi {
  /** Binds to (creating if needed) the user's durable consumer and starts pulling up to maxInflight. */
  bind(spec: DurableSpec, onMessage: (d: DurableDelivery) => void): Promise<LiveFeed>;
}

/** What the fan-out, WebSocket and HTTP layers need from a broker (JetStream, or Redis pub/sub as a baseline). */
export interface Broker {
  readonly kind: "jetstream" | "redis";
  readonly capabilities: BrokerCapabilities;
  /** Present when the broker stores messages (JetStream). */
  readonly replay?: ReplayApi;
  /** Present when the broker has acked durable consumers (JetStream). */
  readonly durables?: DurableApi;
  /** True while the broker connection is up. */
  isConnected(): boolean;
  publish(channel: string, payload: Uint8Array, msgId?: string): Promise<PublishResult>;
  /** Starts live delivery of every new message on `pattern`; resolves once delivery is set up. */
  live(pattern: string, onMessage: (m: BrokerMessage) => void): Promise<LiveFeed>;
  onEvent(listener: (e: BrokerEvent) => void): void;
  /** Drains and closes the connection. */
  close(): Promise<void>;
}
