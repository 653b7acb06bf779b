import type { LeaseStore, SharedStateApi, SharedStateSettings } from "./broker.js";

/** One stored event as the webhook sender reads it: its stream sequence (the event's id) and its JSON. */
export type StoredEvent = { seq: number; json: string; working(): void; ack(): void; nak(): void };

export type WebhookLag = { pending: number; oldestAt?: number };

/** What the webhook sender needs of the events stream (a fake of it tests the sender in process). */
export interface EventSource {
  /** Up to `max` events in stream order, waiting at most `waitMs` for them; none when nothing came. */
  fetch(max: number, waitMs: number): Promise<StoredEvent[]>;
  /** The oldest sequence the stream still holds (events below it are gone: their retention ran out). */
  firstSeq(): Promise<number>;
  /**
   * Events handed out by the consumer and not acknowledged yet, whoever has them (this sender's, and those of a
   * sender that stopped or died whose hand-back the consumer has not acted on yet).
   */
  outstanding(): Promise<number>;
  /**
   * The sender's lag: events not delivered yet (the consumer's waiting ones and those handed out but not
   * acknowledged), and when the oldest of them was stored (ms since the epoch; absent when none is pending).
   */
  lag(): Promise<WebhookLag>;
}

/**
 * What the events feature (events/start.ts, in the primary) needs of the broker, and all it reaches of it:
 * the events stream, the webhook's shared reader and its sender's lease, the cluster's shared state, and a
 * way to store an event. Each `ensure`-like call creates what it stands on, or brings it to the settings
 * given when the broker was made (EVENTS_*), and is tried again while a fresh cluster elects leaders.
 * JetStream implements it (broker/jetstream/events-broker.ts); the Redis baseline has no stream for events.
 */
export interface EventsBroker {
  /** Creates the events stream, or brings an existing one's subjects, retention and replicas to the settings. */
  ensureStream(): Promise<void>;
  /**
   * The deployment's one reader of the events stream for the webhook (a durable consumer every instance
   * shares, made or updated here): at most `maxAckPending` events out unacknowledged, each handed to another
   * reader `ackWaitMs` after its last heartbeat.
   */
  webhookSource(o: { maxAckPending: number; ackWaitMs: number }): Promise<EventSource>;
  /** Where the webhook sender's lease is kept (made or updated here); a record runs out `leaseMs` after it was written. */
  webhookLease(leaseMs: number): Promise<LeaseStore>;
  /** The cluster's shared state (its bucket made or updated here); rejects when the server cannot keep it (nats-server before 2.11). */
  sharedState(s: SharedStateSettings): Promise<SharedStateApi>;
  /** Stores an event's JSON under `subject`; resolves with its sequence. With `msgId`, a repeat within the duplicate window is dropped. */
  appendEvent(subject: string, json: string, msgId?: string): Promise<number>;
}
