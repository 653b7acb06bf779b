import { atHome, whileElecting } from "./stream.js";
import { ensureOwnStream } from "./own-stream.js";
import { headers, nanos, type MsgHdrs, type NatsConnection } from "@nats-io/transport-node";
import type { JetStreamClient, JetStreamManager, StreamConfig } from "@nats-io/jetstream";
import { DiscardPolicy, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import type { Logger } from "../../log.js";
import { clientOfKey, encodeChannel, memberKey } from "./presence-keys.js";
import { presenceSubjects } from "../../config/sections/presence.js";
import type { PresenceApi, PresenceMember, PresenceRecord } from "../broker.js";
import { DirectGet } from "./direct/direct-get.js";
import { jsHeaders } from "./headers.js";
import { guarded } from "../../util/guarded.js";

export type PresenceSettings = { bucket: string; ttlMs: number; replicas: number; storage: "file" | "memory" };

/**
 * How long a removal stays in the bucket (its `Nats-TTL`, and the server's `subject_delete_marker_ttl` for
 * expiries). Removals only matter when they are written (watchers see them then): the shortest the server
 * allows keeps a busy channel's bucket small.
 */
const REMOVAL_TTL_S = 1;
const SNAPSHOT_BATCH = 1_000;

export const presenceStream = (bucket: string): string => `KV_${bucket}`;
/** Where the bucket republishes every record (core NATS; the watch subscribes here). */
const presenceLivePrefix = (bucket: string): string => presenceSubjects(bucket).live;

/**
 * The presence bucket: a JetStream KV bucket (`KV_<bucket>`, subjects `$KV.<bucket>.>`, readable with `nats kv`)
 * holding one entry per member with a per-message TTL (nats-server 2.11+, `allow_msg_ttl`). An entry that
 * expires leaves a delete marker (`Nats-Marker-Reason: MaxAge`, `subject_delete_marker_ttl`), and every
 * record, markers included, is republished on core NATS: that is how watchers see a crashed worker's members
 * leave. Storage and replicas are the event stream's: a single nats-server does not keep a memory stream
 * over a restart, so the default (file) is what keeps the bucket there.
 */
export function desiredPresenceBucket(
  s: Pick<PresenceSettings, "bucket" | "replicas" | "storage"> & { homeRegion?: string },
): Partial<StreamConfig> & { name: string } {
  return {
    name: presenceStream(s.bucket),
    subjects: [`$KV.${s.bucket}.>`],
    storage: s.storage === "memory" ? StorageType.Memory : StorageType.File,
    num_replicas: s.replicas,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.New,
    max_msgs_per_subject: 1,
    max_age: 0,
    allow_direct: true,
    allow_rollup_hdrs: true,
    deny_delete: true,
    allow_msg_ttl: true,
    subject_delete_marker_ttl: nanos(REMOVAL_TTL_S * 1_000),
    republish: { src: `$KV.${s.bucket}.>`, dest: `${presenceLivePrefix(s.bucket)}.>` },
    // Regions: made in the home region; an existing bucket stays where it is (placement is not compared).
    ...atHome(s.homeRegion),
  };
}

/**
 * What is brought to the settings on an existing bucket: the fields the presence watch needs, and its
 * replicas (STREAM_REPLICAS: a bucket made with fewer gains them, and they catch up from its leader).
 */
const COMPARED = [
  "subjects",
  "max_msgs_per_subject",
  "allow_direct",
  "allow_rollup_hdrs",
  "allow_msg_ttl",
  "subject_delete_marker_ttl",
  "republish",
  "num_replicas",
] as const;

/**
 * Creates the presence bucket, or brings the COMPARED fields of an existing one to the settings above by a
 * stream update (own-stream.ts: logged, nothing stored touched; it holds nothing durable anyway). A failure
 * that may pass (a timeout while a fresh cluster elects leaders) is tried again, `attempts` times in all with
 * the delay doubling from `baseDelayMs`; a refusal (a 4xx answer: a server without per-message TTL) is final
 * at once.
 */
export async function ensurePresenceBucket(
  jsm: JetStreamManager,
  s: Pick<PresenceSettings, "bucket" | "replicas" | "storage">,
  log: Logger,
  attempts = 6,
  baseDelayMs = 500,
): Promise<void> {
  const wanted = desiredPresenceBucket(s);
  return whileElecting(`presence bucket ${s.bucket}`, log, () => ensureOwnStream(jsm, wanted, COMPARED, log, "presence bucket"), attempts, baseDelayMs);
}

/** Reads a stored presence entry; undefined for something else put into the bucket. */
function parseMember(payload: Uint8Array, client: string): PresenceMember | undefined {
  try {
    const v = JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString("utf8")) as Partial<PresenceMember>;
    if (typeof v !== "object" || v === null || v.client !== client || typeof v.joinedAt !== "number") return undefined;
    return { client, user: typeof v.user === "string" ? v.user : null, ...(v.info !== undefined ? { info: v.info } : {}), joinedAt: v.joinedAt };
  } catch {
    return undefined;
  }
}

/** A bucket record as a presence record: an empty payload is a removal (purge, delete, TTL marker). */
function recordOf(subject: string, seq: number, payload: Uint8Array): PresenceRecord | undefined {
  const client = clientOfKey(subject);
  if (payload.length === 0) return { client, seq, member: null };
  const member = parseMember(payload, client);
  return member ? { client, seq, member } : undefined;
}

export class JetStreamPresence implements PresenceApi {
  private readonly direct: DirectGet;
  private readonly ttl: string;
  /** For refreshes without an ack (one set of headers, encoded per publish, never changed). */
  private readonly ttlHeaders: MsgHdrs;

  constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly s: PresenceSettings,
  ) {
    this.direct = new DirectGet(nc, presenceStream(s.bucket));
    this.ttl = `${Math.max(1, Math.ceil(s.ttlMs / 1_000))}s`;
    this.ttlHeaders = headers();
    this.ttlHeaders.set("Nats-TTL", this.ttl);
  }

  private subject(channel: string, client: string): string {
    return `$KV.${this.s.bucket}.${memberKey(channel, client)}`;
  }

  async put(channel: string, member: PresenceMember): Promise<void> {
    await this.js.publish(this.subject(channel, member.client), JSON.stringify(member), { ttl: this.ttl });
  }

  async refresh(entries: readonly { channel: string; member: PresenceMember }[]): Promise<void> {
    const [first, ...rest] = entries;
    if (first === undefined) return;
    // Every entry is written now, before anything is awaited: a member removed while the first entry's ack is
    // awaited was put back by a refresh written after its removal (its watchers saw it join again).
    const acked = this.put(first.channel, first.member);
    for (const e of rest) this.nc.publish(this.subject(e.channel, e.member.client), JSON.stringify(e.member), { headers: this.ttlHeaders });
    await acked;
    await this.nc.flush();
  }

  async remove(channel: string, client: string): Promise<void> {
    const h = headers();
    h.set("KV-Operation", "PURGE");
    h.set("Nats-Rollup", "sub");
    await this.js.publish(this.subject(channel, client), new Uint8Array(0), { headers: h, ttl: `${REMOVAL_TTL_S}s` });
  }

  async snapshot(channel: string): Promise<PresenceRecord[]> {
    const subject = `$KV.${this.s.bucket}.${encodeChannel(channel)}.*`;
    const out: PresenceRecord[] = [];
    let seq = 1;
    for (;;) {
      const b = await this.direct.batch({ seq, subject, batch: SNAPSHOT_BATCH });
      for (const m of b.messages) {
        const r = recordOf(m.subject, m.seq, m.payload);
        if (r) out.push(r);
      }
      const last = b.messages.at(-1);
      if (b.pending === 0 || last === undefined) return out;
      seq = last.seq + 1;
    }
  }

  async watch(channel: string, onRecord: (r: PresenceRecord) => void): Promise<{ stop(): void }> {
    const sub = this.nc.subscribe(`${presenceLivePrefix(this.s.bucket)}.${encodeChannel(channel)}.*`, {
      callback: guarded("presence watch", (err, m) => {
        if (err) return;
        const h = jsHeaders(m);
        if (!h) return;
        const r = recordOf(m.subject, h.seq, m.data);
        if (r) onRecord(r);
      }),
    });
    await this.nc.flush();
    return { stop: () => sub.unsubscribe() };
  }

  close(): void {
    this.direct.close();
  }
}
