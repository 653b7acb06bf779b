import { connect, type NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager, type OrderedConsumerOptions } from "@nats-io/jetstream";
import { SubjectMapper } from "../protocol/channel.js";
import type { Logger } from "../log.js";
import type { Broker, BrokerEvent, BrokerMessage, LiveFeed, PublishResult } from "./broker.js";
import { JetStreamDurables, type DurableSettings } from "./jetstream-durable.js";
import { JetStreamReplay } from "./jetstream-replay.js";
import { openOrdered, type OrderedFeed } from "./ordered.js";
import { LIVE_HEARTBEAT_MS, ResilientLiveFeed, type ReconnectHooks } from "./jetstream-live.js";
import { GatewayError } from "../errors.js";

export type JetStreamBrokerOptions = {
  servers: string[];
  stream: string;
  subjectPrefix: string;
  name: string;
  log: Logger;
  publishTimeoutMs?: number;
  durable: DurableSettings;
};

/**
 * JetStream broker: publishes with acks and dedup (Nats-Msg-Id), and feeds each channel pattern from one
 * ordered consumer. The consumer starts right after the stream's last sequence, so when the client library
 * recreates it (reconnect, missed heartbeats) it resumes from the last message it saw instead of replaying.
 */
export class JetStreamBroker implements Broker {
  readonly kind = "jetstream" as const;
  readonly capabilities = { replay: true, durable: true, history: true };
  readonly mapper: SubjectMapper;
  readonly replay: JetStreamReplay;
  readonly durables: JetStreamDurables;
  private listeners: ((e: BrokerEvent) => void)[] = [];
  private readonly liveFeeds: ReconnectHooks = new Set();
  private connected = false;

  private constructor(readonly nc: NatsConnection, readonly js: JetStreamClient, readonly jsm: JetStreamManager, private readonly opts: JetStreamBrokerOptions) {
    this.mapper = new SubjectMapper(opts.subjectPrefix);
    this.replay = new JetStreamReplay(nc, jsm, opts.stream, this.mapper, opts.log);
    this.durables = new JetStreamDurables(js, jsm, opts.stream, this.mapper, opts.durable, opts.log);
    this.connected = true;
    void this.watchStatus();
  }

  static async connect(opts: JetStreamBrokerOptions): Promise<JetStreamBroker> {
    const nc = await connect({
      servers: opts.servers,
      name: opts.name,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      reconnectJitter: 100,
      waitOnFirstConnect: true,
      pingInterval: 10_000,
      maxPingOut: 2,
      // nats.js otherwise creates two Error objects (stack traces) per request, every publish included:
      // measured here as half of the client CPU of a JetStream publish. Our errors carry their own context.
      noAsyncTraces: true,
    });
    const jsm = await jetstreamManager(nc, { timeout: opts.publishTimeoutMs ?? 5_000 });
    const js = jetstream(nc, { timeout: opts.publishTimeoutMs ?? 5_000 });
    return new JetStreamBroker(nc, js, jsm, opts);
  }

  private async watchStatus(): Promise<void> {
    for await (const s of this.nc.status()) {
      if (s.type === "disconnect") {
        this.connected = false;
        this.emit({ type: "disconnected" });
      } else if (s.type === "reconnect") {
        this.connected = true;
        this.emit({ type: "reconnected" });
        for (const f of this.liveFeeds) f.reconnected();
      } else if (s.type === "error") {
        this.emit({ type: "error", error: s.error });
      }
    }
  }

  private emit(e: BrokerEvent): void {
    for (const l of this.listeners) l(e);
  }

  onEvent(listener: (e: BrokerEvent) => void): void {
    this.listeners.push(listener);
  }

  isConnected(): boolean {
    return this.connected && !this.nc.isClosed();
  }

  async publish(channel: string, payload: Uint8Array, msgId?: string): Promise<PublishResult> {
    if (!this.isConnected()) throw new GatewayError("ERR_BROKER_UNAVAILABLE", "NATS is not connected");
    const ack = await this.js.publish(this.mapper.toSubject(channel), payload, msgId ? { msgID: msgId } : undefined);
    return { seq: ack.seq, duplicate: ack.duplicate };
  }

  /** The last sequence of the stream, or of one subject filter when given. */
  async lastSeq(): Promise<number> {
    const si = await this.jsm.streams.info(this.opts.stream);
    return si.state.last_seq;
  }

  async live(pattern: string, onMessage: (m: BrokerMessage) => void): Promise<LiveFeed & { startAfter: number }> {
    if (!this.isConnected()) throw new GatewayError("ERR_BROKER_UNAVAILABLE", "NATS is not connected");
    const startAfter = await this.lastSeq();
    const open = (startSeq: number, deliver: (m: BrokerMessage) => void) =>
      this.orderedFeed(pattern, { opt_start_seq: startSeq, deliver_policy: DeliverPolicy.StartSequence }, deliver, 1_024, LIVE_HEARTBEAT_MS);
    const feed = await ResilientLiveFeed.start(pattern, startAfter, open, onMessage, this.liveFeeds, this.opts.log);
    return { stop: () => feed.stop(), startAfter };
  }

  /** An ordered consumer on one pattern from a start position, delivering through a callback. */
  orderedFeed(pattern: string, position: Partial<OrderedConsumerOptions>, onMessage: (m: BrokerMessage) => void, maxMessages = 1_024, heartbeatMs?: number): Promise<OrderedFeed> {
    return openOrdered({ js: this.js, stream: this.opts.stream, mapper: this.mapper, log: this.opts.log, pattern, position, maxMessages, heartbeatMs }, onMessage);
  }

  async close(): Promise<void> {
    if (this.nc.isClosed()) return;
    try {
      await this.nc.drain();
    } catch {
      await this.nc.close().catch(() => undefined);
    }
  }
}
