/** One message as the fan-out path sees it: the channel, its stream sequence, broker time and raw payload. */
export type BrokerMessage = { channel: string; seq: number; ts: number; payload: Uint8Array };

export type PublishResult = { seq: number; duplicate: boolean };

/** A running live subscription of a worker to one channel pattern. */
export interface LiveFeed {
  /** Stops delivery and releases broker resources. */
  stop(): Promise<void>;
}

export type BrokerEvent =
  | { type: "connected" }
  | { type: "disconnected" }
  | { type: "reconnected" }
  | { type: "error"; error: unknown };

export type BrokerCapabilities = { replay: boolean; durable: boolean; history: boolean };

/** What the fan-out, WebSocket and HTTP layers need from a broker (JetStream, or Redis pub/sub as a baseline). */
export interface Broker {
  readonly kind: "jetstream" | "redis";
  readonly capabilities: BrokerCapabilities;
  /** True while the broker connection is up. */
  isConnected(): boolean;
  publish(channel: string, payload: Uint8Array, msgId?: string): Promise<PublishResult>;
  /** Starts live delivery of every new message on `pattern`; resolves once delivery is set up. */
  live(pattern: string, onMessage: (m: BrokerMessage) => void): Promise<LiveFeed>;
  onEvent(listener: (e: BrokerEvent) => void): void;
  /** Drains and closes the connection. */
  close(): Promise<void>;
}
