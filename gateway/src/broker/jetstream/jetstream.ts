import { replayWebhook } from "./events-stream.js";
import type { ReplayFrom } from "../broker.js";
import { LoopTurn } from "../../util/loop-turn.js";
import { JsPublisher } from "./publisher.js";
import { AckTimeoutWarning, type StreamLook } from "./ack-timeouts.js";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from "@nats-io/jetstream";
import { whileElecting } from "./stream.js";
import type { Logger } from "../../log.js";
import { natsBus } from "./bus.js";
import type { Broker, Bus, BrokerEvent, BrokerMessage, DurableApi, LiveFeed, MessageExtra, PublishResult } from "../broker.js";
import type { DurableSettings } from "./durable.js";
import type { DirectVia } from "./direct/direct-get.js";
import type { RepairReason } from "./live.js";
import { StreamPart, type PartOptions } from "./stream-part.js";
import { RoutedReplay } from "./routed-replay.js";
import { NamespaceRoutes, spansMessage } from "../../namespaces/routing.js";
import type { Namespace } from "../../namespaces/namespace.js";
import { GatewayError } from "../../errors.js";
import { ErrorCode } from "../../protocol/codes.js";
import { JetStreamPresence, type PresenceSettings } from "./presence.js";
import { natsJsOptions, type NatsSecurity } from "./nats-security.js";
import { callbackFaults } from "../../util/guarded.js";

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
  /** Namespaces, each with a stream of its own (NAMESPACES_FILE); none: every channel in `stream`. */
  namespaces?: NamespaceRoutes<Namespace>;
  /** Regions, outside the home region: this region's name (its mirrors are `<stream>-<name>`) and REGION_RESUME_WAIT. */
  region?: { name: string; waitMs: number };
};

/** How often the connection is asked for a round trip (a PING). */
const PROBE_EVERY_MS = 1_000;
/** How long a round trip may take before the connection counts as down (/readyz 503, publishes refused). */
export const PROBE_TIMEOUT_MS = 4_000;

/**
 * JetStream broker: publishes with acks and dedup (Nats-Msg-Id) and per-message TTLs (Nats-TTL); one
 * connection, one part per stream (the default stream, and one per namespace: broker/jetstream/stream-part.ts)
 * to which each channel or pattern is routed; live delivery through core NATS
 * subscriptions on the stream's republished messages (one per pattern per worker, no consumer), repaired
 * from the stream on a gap, a reconnect or a leader change; replay and history through direct gets.
 * Durable subscriptions are the only consumers it creates.
 */
export class JetStreamBroker implements Broker {
  readonly kind = "jetstream" as const;
  /** The default stream's part, then one per namespace. */
  readonly parts: readonly StreamPart[];
  readonly replay: RoutedReplay;
  readonly durables: DurableApi;
  readonly presence?: JetStreamPresence;
  readonly bus: Bus;
  private listeners: ((e: BrokerEvent) => void)[] = [];
  private readonly publishTurn = new LoopTurn();
  private readonly publisher: JsPublisher;
  private readonly ackTimeouts: AckTimeoutWarning;
  private readonly routes: NamespaceRoutes<Namespace>;
  private readonly byNamespace = new Map<string, StreamPart>();
  private readonly defaultPart: StreamPart;
  private connected = false;
  /** When the unanswered round-trip probe was sent (0: none is out), and which probe it is. */
  private probeSentAt = 0;
  private probeId = 0;
  /** Messages the connection's reader had handed out when the probe's window began (nats.js' `inMsgs`). */
  private probeInMsgs = 0;
  /** When the probe's timer last ran: a loop that was blocked longer has not yet read what came meanwhile. */
  private probeTick = Date.now();
  private readonly probeTimer: NodeJS.Timeout;

  private constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    private readonly opts: JetStreamBrokerOptions,
  ) {
    this.bus = natsBus(nc);
    this.ackTimeouts = new AckTimeoutWarning(
      opts.log,
      (subject) => (this.parts.find((p) => p.mapper.owns(subject)) ?? this.defaultPart).spec.stream,
      (stream) => this.lookStream(stream),
    );
    this.publisher = new JsPublisher(nc, opts.publishTimeoutMs ?? 5_000, (subject) => this.ackTimeouts.timedOut(subject));
    this.routes = opts.namespaces ?? new NamespaceRoutes<Namespace>([]);
    const partOpts = (suffix: string): PartOptions => ({
      livePrefix: opts.livePrefix,
      log: opts.log,
      // One direct-get connection per stream: a link reads one stream's $JS.API.DIRECT.GET subject.
      linkName: opts.replayConnection === "shared" ? undefined : `${opts.name}-direct${suffix}`,
      security: opts.security,
      onDirectGet: opts.onDirectGet,
      directGetQueue: opts.directGetQueue,
      durable: opts.durable,
      liveHoldLimit: opts.liveHoldLimit ?? 100_000,
      onRepair: opts.onRepair,
      onEpoch: (stream, epoch) => this.emit({ type: "epoch", epoch, stream }),
      region: opts.region,
    });
    this.defaultPart = new StreamPart(nc, js, jsm, { stream: opts.stream, subjectPrefix: opts.subjectPrefix, resumeWindowMs: 0 }, partOpts(""));
    const parts = [this.defaultPart];
    for (const ns of this.routes.list) {
      const part = new StreamPart(
        nc,
        js,
        jsm,
        { stream: ns.stream.name, subjectPrefix: ns.channelSubjectPrefix, namespace: ns.name, resumeWindowMs: ns.resumeWindowMs },
        partOpts(`-${ns.name}`),
      );
      this.byNamespace.set(ns.name, part);
      parts.push(part);
    }
    this.parts = parts;
    this.replay = new RoutedReplay((p) => this.partOf(p));
    this.durables = { bind: (spec, onMessage) => this.partOf(spec.pattern).durables.bind(spec, onMessage) };
    if (opts.presence) this.presence = new JetStreamPresence(nc, js, opts.presence);
    this.connected = true;
    void this.watchStatus();
    this.probeTimer = setInterval(() => this.probe(), PROBE_EVERY_MS).unref();
  }

  /**
   * Sends a PING (flush) unless one is still out. The connection's reader parses the PONG: a reader that
   * stopped (a throw inside it ends nats.js' read loop while the socket stays open) leaves it unanswered, and
   * after PROBE_TIMEOUT_MS the connection counts as down (`isConnected`, /readyz), long before nats.js' own
   * pings declare it stale and reconnect (2 × 10 s).
   */
  private probe(): void {
    this.probeTick = Date.now();
    if (this.probeSentAt !== 0 || !this.connected || this.nc.isClosed()) return;
    const id = ++this.probeId;
    this.probeSentAt = Date.now();
    this.probeInMsgs = this.nc.stats().inMsgs;
    const done = (): void => {
      if (this.probeId === id) this.probeSentAt = 0;
    };
    this.nc.flush().then(done, done);
  }

  /**
   * The connection answered its last round-trip probe, or the one out is younger than PROBE_TIMEOUT_MS, or the
   * reader is still handing out messages (a busy reader, its PONG queued behind thousands of replies, is alive:
   * only one that stopped reading counts as down), or this process's own loop was held up since the last probe
   * tick (what arrived meanwhile is not read yet).
   */
  private get answering(): boolean {
    if (this.probeSentAt === 0) return true;
    const now = Date.now();
    const read = this.nc.stats().inMsgs;
    if (read !== this.probeInMsgs) {
      this.probeInMsgs = read;
      this.probeSentAt = now;
      return true;
    }
    return now - this.probeSentAt < PROBE_TIMEOUT_MS || now - this.probeTick > 2 * PROBE_EVERY_MS;
  }

  /** What JetStream says of `stream` now, and whether this connection still listens for acknowledgements (the ack-timeout warning). */
  private async lookStream(stream: string): Promise<StreamLook> {
    const us = {
      connected: this.isConnected(),
      ackReplyOpen: this.publisher.listening,
      ackReplyRoundTrip: await this.publisher.replyRoundTrip(2_000),
      inFlight: this.publisher.inFlight,
    };
    try {
      const si = await this.jsm.streams.info(stream);
      return { ...us, streamFound: true, streamSubjects: si.config.subjects, streamLastSeq: si.state.last_seq, streamCreated: si.created };
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) return { ...us, streamFound: false };
      throw e;
    }
  }

  /** The part of a pattern's stream; a pattern spanning namespaces is refused (one position, one stream). */
  partOf(pattern: string): StreamPart {
    if (this.routes.empty) return this.defaultPart;
    const r = this.routes.ofPattern(pattern);
    if (r.kind === "default") return this.defaultPart;
    if (r.kind === "spans") throw new GatewayError(ErrorCode.BadChannel, spansMessage(pattern, r.names));
    return this.byNamespace.get(r.ns.name) ?? this.defaultPart;
  }

  /** The part of a concrete channel (the publish path: no pattern analysis). */
  private partOfChannel(channel: string): StreamPart {
    if (this.routes.empty) return this.defaultPart;
    const ns = this.routes.ofChannel(channel);
    return ns ? (this.byNamespace.get(ns.name) ?? this.defaultPart) : this.defaultPart;
  }

  directLinkUp(): boolean {
    return this.parts.every((p) => p.replay.direct.fastReady);
  }

  epochOf(pattern: string): string | undefined {
    return this.epochReader(pattern)();
  }

  epochReader(pattern: string): () => string | undefined {
    let part: StreamPart;
    try {
      part = this.partOf(pattern);
    } catch {
      return () => undefined; // a pattern spanning namespaces, refused at every door before it gets here
    }
    return () => part.epoch;
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
        this.probeId++; // a probe sent on the lost connection is answered never, or late: forgotten
        this.probeSentAt = 0;
        this.emit({ type: "reconnected" });
        for (const p of this.parts) p.resyncFeeds("reconnect");
      } else if (s.type === "error") {
        this.emit({ type: "error", error: s.error });
      }
    }
  }

  private emit(e: BrokerEvent): void {
    // A listener that throws must not end the status loop (nor keep the others from hearing).
    for (const l of this.listeners)
      try {
        l(e);
      } catch (err) {
        callbackFaults.fault("broker event", err);
      }
  }

  onEvent(listener: (e: BrokerEvent) => void): void {
    this.listeners.push(listener);
  }

  /** Connected, and the connection's reader answers (a round trip within PROBE_TIMEOUT_MS). */
  isConnected(): boolean {
    return this.connected && !this.nc.isClosed() && this.answering;
  }

  async appendEvent(subject: string, json: string): Promise<number> {
    return (await this.js.publish(subject, json)).seq;
  }

  replayEvents(stream: string, from: ReplayFrom): Promise<{ pending: number } | { refused: string }> {
    return replayWebhook(this.jsm, stream, from);
  }

  async publish(channel: string, payload: Uint8Array, msgId?: string, ttl?: string, type?: string, extra?: MessageExtra): Promise<PublishResult> {
    if (!this.isConnected()) throw new GatewayError(ErrorCode.BrokerUnavailable, "NATS is not connected");
    const subject = this.partOfChannel(channel).mapper.toSubject(channel);
    // The publishes of one event-loop turn reach nats.js together: one socket write for all of them.
    await this.publishTurn.wait();
    return this.publisher.publish(subject, payload, msgId, ttl, type, extra);
  }

  async live(pattern: string, onMessage: (m: BrokerMessage) => void): Promise<LiveFeed> {
    if (!this.isConnected()) throw new GatewayError(ErrorCode.BrokerUnavailable, "NATS is not connected");
    return this.partOf(pattern).live(pattern, onMessage);
  }

  async close(): Promise<void> {
    clearInterval(this.probeTimer);
    this.ackTimeouts.stop();
    if (this.nc.isClosed()) return;
    for (const p of this.parts) p.close();
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
