import { headers, type NatsConnection } from "@nats-io/transport-node";
import type { JetStreamClient, JetStreamManager, StreamConfig } from "@nats-io/jetstream";
import { DeliverPolicy, JetStreamApiCodes, JetStreamApiError, jetstream, jetstreamManager } from "@nats-io/jetstream";
import type { Logger } from "../../log.js";
import type { LeaseStore, SharedRecord, SharedStateApi, SharedStateSettings } from "../broker.js";
import { desiredPresenceBucket } from "./presence.js";
import { whileElecting } from "./stream.js";
import { ensureOwnStream, type OwnStream } from "./own-stream.js";
import { guarded } from "../../util/guarded.js";

/** Deletions (purges) stay this long: watchers see them when written. */
const REMOVAL_TTL = "1s";
/** An `off` announcement stays past the events stream's duplicate window (2 min), then goes. */
const OFF_TTL = "10m";

/**
 * The cluster's shared state as a JetStream KV bucket (`KV_<bucket>`, readable with `nats kv`) with per-key
 * TTL (nats-server 2.11+), made like the presence bucket but without its republish (the leader reads it with
 * an ordered consumer): `i.<instance>` heartbeats and the `leader` lease expire unless refreshed (an expiry
 * leaves a delete marker the watch sees); `s.<key>.<instance>` shares and `a.<key>` announcements do not (an
 * `off` one after OFF_TTL).
 */
function desired(s: Pick<SharedStateSettings, "bucket" | "replicas" | "storage" | "homeRegion">): Partial<StreamConfig> & { name: string } {
  const { republish: _republish, ...config } = desiredPresenceBucket(s);
  return config;
}

/** The bucket's stream as the gateway wants it: only its replicas are kept to the settings. */
export const sharedStateBucket = (s: Pick<SharedStateSettings, "bucket" | "replicas" | "storage" | "homeRegion">): OwnStream => ({
  wanted: desired(s),
  fields: ["num_replicas"],
  what: "shared state bucket",
  drift: "state_bucket",
});

/**
 * Creates the bucket, or brings an existing one's replicas to the settings (STREAM_REPLICAS: a bucket made
 * with fewer gains them, and they catch up); nothing else of it is changed (it holds nothing a restart
 * cannot write again).
 */
export async function ensureSharedState(
  jsm: JetStreamManager,
  s: Pick<SharedStateSettings, "bucket" | "replicas" | "storage" | "homeRegion">,
  log: Logger,
): Promise<void> {
  const own = sharedStateBucket(s);
  await whileElecting(`bucket ${s.bucket}`, log, () => ensureOwnStream(jsm, own.wanted, own.fields, log, own.what));
}

const wrongLast = (e: unknown): boolean => e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamWrongLastSequence;

export class JetStreamSharedState implements SharedStateApi {
  private readonly prefix: string;
  private readonly ttl: string;
  private heartbeatSeq?: number;

  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly s: Pick<SharedStateSettings, "bucket" | "ttlMs">,
  ) {
    this.prefix = `$KV.${s.bucket}`;
    this.ttl = `${Math.max(1, Math.ceil(s.ttlMs / 1_000))}s`;
  }

  static async connect(nc: NatsConnection, s: SharedStateSettings): Promise<JetStreamSharedState> {
    return new JetStreamSharedState(jetstream(nc), await jetstreamManager(nc), s);
  }

  async heartbeat(instance: string): Promise<"kept" | "renewed"> {
    const subject = `${this.prefix}.i.${instance}`;
    if (this.heartbeatSeq !== undefined)
      try {
        this.heartbeatSeq = (await this.js.publish(subject, "1", { ttl: this.ttl, expect: { lastSubjectSequence: this.heartbeatSeq } })).seq;
        return "kept";
      } catch (e) {
        if (!wrongLast(e)) throw e;
      }
    this.heartbeatSeq = (await this.js.publish(subject, "1", { ttl: this.ttl })).seq;
    return "renewed";
  }

  async share(key: string, instance: string, held: boolean): Promise<void> {
    const subject = `${this.prefix}.s.${key}.${instance}`;
    await (held ? this.js.publish(subject, "1") : this.purge(subject));
  }

  async forget(shares: readonly { key: string; instance: string }[]): Promise<void> {
    await Promise.all(shares.map((s) => this.purge(`${this.prefix}.s.${s.key}.${s.instance}`)));
  }

  /**
   * The leader's lease (`leader`, for services/leader-lease.ts): each write expires after the TTL unless
   * written again, and is conditional on the key's last sequence, so of two instances only one takes it.
   * An expired or released lease reads as free (its delete marker, or an empty holder).
   */
  leaderLease(): LeaseStore {
    const subject = `${this.prefix}.leader`;
    return {
      read: async () => {
        const m = await this.jsm.streams.getMessage(`KV_${this.s.bucket}`, { last_by_subj: subject });
        return m ? { seq: m.seq, holder: m.string() } : undefined;
      },
      write: async (holder, after) => {
        try {
          return (await this.js.publish(subject, holder, { ttl: this.ttl, expect: { lastSubjectSequence: after } })).seq;
        } catch (e) {
          if (wrongLast(e)) return undefined;
          throw e;
        }
      },
    };
  }

  async resign(instance: string): Promise<void> {
    await this.purge(`${this.prefix}.i.${instance}`);
    this.heartbeatSeq = undefined;
  }

  async announce(key: string, on: boolean): Promise<number> {
    return (await this.js.publish(`${this.prefix}.a.${key}`, on ? "1" : "0", on ? {} : { ttl: OFF_TTL })).seq;
  }

  async watch(onRecord: (r: SharedRecord) => void, onSynced: () => void, onLost: (e: unknown) => void): Promise<{ stop(): void }> {
    const consumer = await this.js.consumers.get(`KV_${this.s.bucket}`, {
      filter_subjects: [`${this.prefix}.i.>`, `${this.prefix}.s.>`, `${this.prefix}.a.>`],
      deliver_policy: DeliverPolicy.LastPerSubject,
    });
    const empty = (await this.jsm.streams.info(`KV_${this.s.bucket}`)).state.messages === 0;
    const messages = await consumer.consume();
    let synced = false;
    const markSynced = (): void => {
      if (synced) return;
      synced = true;
      onSynced();
    };
    if (empty) markSynced();
    let stopped = false;
    const take = guarded("shared state watch", (r: SharedRecord) => onRecord(r));
    void (async () => {
      for await (const m of messages) {
        const r = this.recordOf(m.subject.slice(this.prefix.length + 1), m.seq, m.data);
        if (r) take(r);
        if (m.info.pending === 0) markSynced();
      }
    })().then(
      () => stopped || onLost(new Error("the watch of the shared state ended")),
      (e: unknown) => stopped || onLost(e),
    );
    return {
      stop: () => {
        stopped = true;
        void messages.stop();
      },
    };
  }

  /** A record of the bucket from its key; an empty payload is a deletion (a purge, or a TTL's marker). */
  private recordOf(key: string, seq: number, data: Uint8Array): SharedRecord | undefined {
    const set = data.length > 0;
    if (key.startsWith("i.")) return { type: "heartbeat", instance: key.slice(2), alive: set };
    if (key.startsWith("a.")) return { type: "announced", key: key.slice(2), on: set && data[0] === 0x31, seq };
    if (!key.startsWith("s.")) return undefined;
    const dot = key.lastIndexOf(".");
    return { type: "share", key: key.slice(2, dot), instance: key.slice(dot + 1), held: set };
  }

  private async purge(subject: string): Promise<void> {
    const h = headers();
    h.set("KV-Operation", "PURGE");
    h.set("Nats-Rollup", "sub");
    await this.js.publish(subject, new Uint8Array(0), { headers: h, ttl: REMOVAL_TTL });
  }
}
