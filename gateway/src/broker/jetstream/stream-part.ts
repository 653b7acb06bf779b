import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { SubjectMapper } from "../../protocol/channel.js";
import type { Logger } from "../../log.js";
import type { BrokerMessage, LiveFeed, StreamState } from "../broker.js";
import { JetStreamDurables, type DurableSettings } from "./durable.js";
import { JetStreamReplay } from "./replay.js";
import type { DirectVia } from "./direct/direct-get.js";
import { CoreLiveFeed, type LiveFeedHooks, type RepairReason } from "./live.js";
import type { NatsSecurity } from "./nats-security.js";
import { guarded } from "../../util/guarded.js";
import { mirrorName } from "./regions.js";

/** A failed stream state read is asked again this many times, after 250 ms, 0.5, 1, 2, 4 and 8 s. */
const STATE_RETRIES = 6;
const STATE_RETRY_MS = 250;

/** Which stream a part serves: the default one, or a namespace's. */
export type PartSpec = {
  /** The stream's name. */
  stream: string;
  /** Maps channels to the stream's subjects: `<SUBJECT_PREFIX>` (default) or `<SUBJECT_PREFIX>_ns` (namespaces). */
  subjectPrefix: string;
  /** The namespace's name; undefined for the default stream. */
  namespace?: string;
  /** A resume or start older than now − this begins at the window's first message; 0: none. */
  resumeWindowMs: number;
};

export type PartOptions = {
  livePrefix: string;
  log: Logger;
  linkName?: string;
  security?: NatsSecurity;
  onDirectGet?: (via: DirectVia) => void;
  directGetQueue?: number;
  durable: DurableSettings;
  liveHoldLimit: number;
  onRepair?: (why: RepairReason) => void;
  /** The stream was deleted and created again (a new epoch): its feeds have started over. */
  onEpoch: (stream: string, epoch: string) => void;
  /** Regions, outside the home region: reads go to this region's mirror of the stream (regions.ts). */
  region?: { name: string; waitMs: number };
};

/**
 * Everything of the JetStream broker that belongs to one stream: its subject mapping, replay reads,
 * durables, epoch, and the live feeds whose positions are its sequences (resynced on its leader's and
 * creation advisories). The broker has one part for the default stream and one per namespace, on one
 * connection, and routes each channel or pattern to its part.
 */
export class StreamPart {
  readonly mapper: SubjectMapper;
  readonly replay: JetStreamReplay;
  readonly durables: JetStreamDurables;
  private readonly liveFeeds: LiveFeedHooks = new Set();
  private readonly liveMapper: SubjectMapper;
  private epoch_?: string;
  /** The broker is closing (the worker drains): what fails from here on failed because of it. */
  private closed = false;
  /** A stream state read after an advisory failed: it is asked again (STATE_RETRIES times at most). */
  private retry?: NodeJS.Timeout;

  constructor(
    private readonly nc: NatsConnection,
    js: JetStreamClient,
    jsm: JetStreamManager,
    readonly spec: PartSpec,
    private readonly opts: PartOptions,
  ) {
    this.mapper = new SubjectMapper(spec.subjectPrefix);
    this.liveMapper = new SubjectMapper(opts.livePrefix);
    this.replay = new JetStreamReplay(nc, jsm, spec.stream, this.mapper, opts.log, {
      linkName: opts.linkName,
      security: opts.security,
      onSend: opts.onDirectGet,
      maxQueued: opts.directGetQueue,
      ...(opts.region ? { region: { mirror: mirrorName(spec.stream, opts.region.name), waitMs: opts.region.waitMs } } : {}),
    });
    this.durables = new JetStreamDurables(nc, js, jsm, spec.stream, this.mapper, opts.durable, opts.log);
    // A new stream leader may not have republished what the old one stored last: every feed checks.
    nc.subscribe(`$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.${spec.stream}`, { callback: guarded("stream advisory", () => this.resyncFeeds("leader")) });
    // A stream deleted and created again (another epoch) restarts every feed instead.
    nc.subscribe(`$JS.EVENT.ADVISORY.STREAM.CREATED.${spec.stream}`, { callback: guarded("stream advisory", () => this.resyncFeeds("leader")) });
    this.replay.state().then(
      (st) => {
        this.epoch_ ??= st.epoch;
      },
      () => undefined,
    );
  }

  get epoch(): string | undefined {
    return this.epoch_;
  }

  /** The stream's state, with the resume window's first seq when the namespace has a window. */
  async state(): Promise<StreamState> {
    const st = await this.replay.state();
    if (this.spec.resumeWindowMs <= 0) return st;
    const from = await this.replay.seqAtTime(">", new Date(Date.now() - this.spec.resumeWindowMs).toISOString());
    return from > st.firstSeq ? { ...st, resumeFrom: from } : st;
  }

  live(pattern: string, onMessage: (m: BrokerMessage) => void): Promise<LiveFeed> {
    const mapper = this.mapper;
    return CoreLiveFeed.start(
      pattern,
      mapper.toSubject(pattern),
      this.liveMapper.toSubject(pattern),
      {
        nc: this.nc,
        reads: this.replay.repairs,
        toChannel: (s) => mapper.toChannel(s),
        owns: (s) => mapper.owns(s),
        log: this.opts.log,
        holdLimit: this.opts.liveHoldLimit,
        onRepair: this.opts.onRepair,
      },
      this.liveFeeds,
      onMessage,
    );
  }

  /**
   * Every live feed reads what it may have missed; a recreated stream (new epoch) restarts them instead. When the
   * stream's state cannot be read (a slow or restarting server), the feeds repair from their position and the
   * read is tried again with backoff, so that a new epoch an advisory announced is not missed until the next one.
   */
  resyncFeeds(why: "reconnect" | "leader", tries = 0): void {
    if (this.closed) return;
    const stream = this.spec.stream;
    this.replay.state().then(
      (st) => {
        this.clearRetry();
        const was = this.epoch_;
        this.epoch_ = st.epoch;
        if (was !== undefined && st.epoch !== was) {
          this.opts.log.warn({ stream, epoch: st.epoch, was }, "stream was recreated: live feeds start over at its last sequence");
          for (const f of this.liveFeeds) f.restart(st.lastSeq);
          this.opts.onEpoch(stream, st.epoch);
        } else {
          for (const f of this.liveFeeds) f.resync(why);
        }
      },
      (e) => {
        // A read the closing connection cut (DrainingConnectionError) is the worker's own doing, not a fault.
        if (this.closed) return this.opts.log.debug({ err: e, why, stream }, "stream state read ended by the shutdown");
        this.opts.log.warn({ err: e, why, stream, tries }, "stream state unavailable; live feeds repair from their position");
        for (const f of this.liveFeeds) f.resync(why);
        // One retry pending at a time: a second failure while it waits changes nothing.
        if (tries >= STATE_RETRIES || this.retry) return;
        const timer = setTimeout(
          () => {
            this.retry = undefined;
            this.resyncFeeds(why, tries + 1);
          },
          STATE_RETRY_MS * 2 ** tries,
        );
        timer.unref();
        this.retry = timer;
      },
    );
  }

  private clearRetry(): void {
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
  }

  close(): void {
    this.closed = true;
    this.clearRetry();
    this.replay.close();
  }
}
