import { LoopTurn } from "../../util/loop-turn.js";
import { JsPublisher } from "./publisher.js";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { whileElecting } from "./stream.js";
import { SubjectMapper } from "../../protocol/channel.js";
import type { Logger } from "../../log.js";
import { natsBus } from "./bus.js";
import type { Broker, Bus, BrokerEvent, BrokerMessage, LiveFeed, PublishResult } from "../broker.js";
import { JetStreamDurables, type DurableSettings } from "./durable.js";
import { JetStreamReplay } from "./replay.js";
import type { DirectVia } from "./direct/direct-get.js";
import { CoreLiveFeed, type LiveFeedHooks, type RepairReason } from "./live.js";
import { GatewayError } from "../../errors.js";
import { ErrorCode } from "../../protocol/codes.js";
import { JetStreamPresence, type PresenceSettings } from "./presence.js";
import { natsJsOptions, type NatsSecurity } from "./nats-security.js";

export type JetStreamBrokerOptions = {
  servers: string[];
  /** Credentials and TLS for the main connection and the direct-get link. */
  security?: NatsSecurity;
  stream: string;
  subjectPrefix: string;
  /** Prefix the stream republishes every stored message under (its `republish` rule). */
  livePrefix: string;
  /** Direct gets on a connection of their own, read without nats.js (own, the default), or on the main one. */
  replayConnection?: "own" | "shared";
  name: string;
  log: Logger;
  publishTimeoutMs?: number;
  durable: DurableSettings;
  /** Live messages a feed holds at most while it repairs a gap. */
  liveHoldLimit?: number;
  /** Called for every live-feed repair (metrics). */
  onRepair?: (why: RepairReason) => void;
  /** Called for every direct get put on the wire, with the connection it went through (metrics). */
  onDirectGet?: (via: DirectVia) => void;
  /** Direct gets waiting to be sent, at most (DIRECT_GET_QUEUE). */
  directGetQueue?: number;
  /** The presence bucket (created by the primary); without it the broker keeps no presence. */
  presence?: PresenceSettings;
};

/**
 * JetStream broker: publishes with acks and dedup (Nats-Msg-Id); live delivery through core NATS
 * subscriptions on the stream's republished messages (one per pattern per worker, no consumer), repaired
 * from the stream on a gap, a reconnect or a leader change; replay and history through direct gets.
 * Durable subscriptions are the only consumers it creates.
 */
export class JetStreamBroker implements Broker {
  readonly kind = "jetstream" as const;
  readonly capabilities = { replay: true, durable: true, history: true };
  readonly mapper: SubjectMapper;
  readonly liveMapper: SubjectMapper;
  readonly replay: JetStreamReplay;
  readonly durables: JetStreamDurables;
  readonly presence?: JetStreamPresence;
  readonly bus: Bus;
  private listeners: ((e: BrokerEvent) => void)[] = [];
  private readonly liveFeeds: LiveFeedHooks = new Set();
  private readonly publishTurn = new LoopTurn();
  private readonly publisher: JsPublisher;
  private connected = false;
  private epoch_?: string;

  private constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    private readonly opts: JetStreamBrokerOptions,
  ) {
    this.mapper = new SubjectMapper(opts.subjectPrefix);
    this.liveMapper = new SubjectMapper(opts.livePrefix);
    this.bus = natsBus(nc);
    this.publisher = new JsPublisher(nc, opts.publishTimeoutMs ?? 5_000);
    this.replay = new JetStreamReplay(nc, jsm, opts.stream, this.mapper, opts.log, {
      linkName: opts.replayConnection === "shared" ? undefined : `${opts.name}-direct`,
      security: opts.security,
      onSend: opts.onDirectGet,
      maxQueued: opts.directGetQueue,
    });
    this.durables = new JetStreamDurables(nc, js, jsm, opts.stream, this.mapper, opts.durable, opts.log);
    if (opts.presence) this.presence = new JetStreamPresence(nc, js, opts.presence);
    this.connected = true;
    void this.watchStatus();
    // A new stream leader may not have republished what the old one stored last: every feed checks.
    nc.subscribe(`$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.${opts.stream}`, { callback: () => this.resyncFeeds("leader") });
    // A stream deleted and created again (another epoch) restarts every feed instead.
    nc.subscribe(`$JS.EVENT.ADVISORY.STREAM.CREATED.${opts.stream}`, { callback: () => this.resyncFeeds("leader") });
    this.replay.state().then(
      (st) => {
        this.epoch_ ??= st.epoch;
      },
      () => undefined,
    );
  }

  directLinkUp(): boolean {
    return this.replay.direct.fastReady;
  }

  get epoch(): string | undefined {
    return this.epoch_;
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
      ...(opts.security ? natsJsOptions(opts.security) : {}),
    });
    // Its first request (JetStream's account info) fails while the meta leader is being elected: a worker
    // started during a NATS node's restart waits for it rather than exit.
    const jsm = await whileElecting("JetStream", opts.log, () => jetstreamManager(nc, { timeout: opts.publishTimeoutMs ?? 5_000 })).catch(
      async (e: unknown) => {
        await nc.close().catch(() => undefined);
        throw e;
      },
    );
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
        this.resyncFeeds("reconnect");
      } else if (s.type === "error") {
        this.emit({ type: "error", error: s.error });
      }
    }
  }

  /** Every live feed reads what it may have missed; a recreated stream (new epoch) restarts them instead. */
  private resyncFeeds(why: "reconnect" | "leader"): void {
    this.replay.state().then(
      (st) => {
        const was = this.epoch_;
        this.epoch_ = st.epoch;
        if (was !== undefined && st.epoch !== was) {
          this.opts.log.warn({ stream: this.opts.stream, epoch: st.epoch, was }, "stream was recreated: live feeds start over at its last sequence");
          for (const f of this.liveFeeds) f.restart(st.lastSeq);
          this.emit({ type: "epoch", epoch: st.epoch });
        } else {
          for (const f of this.liveFeeds) f.resync(why);
        }
      },
      (e) => {
        this.opts.log.warn({ err: e, why }, "stream state unavailable; live feeds repair from their position");
        for (const f of this.liveFeeds) f.resync(why);
      },
    );
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
    if (!this.isConnected()) throw new GatewayError(ErrorCode.BrokerUnavailable, "NATS is not connected");
    // The publishes of one event-loop turn reach nats.js together: one socket write for all of them.
    await this.publishTurn.wait();
    return this.publisher.publish(this.mapper.toSubject(channel), payload, msgId);
  }

  async live(pattern: string, onMessage: (m: BrokerMessage) => void): Promise<LiveFeed> {
    if (!this.isConnected()) throw new GatewayError(ErrorCode.BrokerUnavailable, "NATS is not connected");
    const mapper = this.mapper;
    return CoreLiveFeed.start(
      pattern,
      mapper.toSubject(pattern),
      this.liveMapper.toSubject(pattern),
      {
        nc: this.nc,
        reads: this.replay.repairs,
        toChannel: (s) => mapper.toChannel(s),
        log: this.opts.log,
        holdLimit: this.opts.liveHoldLimit ?? 100_000,
        onRepair: this.opts.onRepair,
      },
      this.liveFeeds,
      onMessage,
    );
  }

  async close(): Promise<void> {
    if (this.nc.isClosed()) return;
    this.replay.close();
    this.presence?.close();
    try {
      await this.nc.drain();
    } catch {
      await this.nc.close().catch(() => undefined);
    }
    // After the drain, which lets acknowledgements on their way in still answer their publishes.
    this.publisher.close();
  }
}
