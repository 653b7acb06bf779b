import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { SubjectMapper } from "../../protocol/channel.js";
import type { Logger } from "../../log.js";
import type { BrokerMessage, LastValuePage, PageBounds, ReplayApi, StoredPage, StreamState } from "../broker.js";
import { GatewayError } from "../../errors.js";
import { ErrorCode } from "../../protocol/codes.js";
import { SharedQuery } from "../../util/shared-query.js";
import { DirectGet, type DirectBatch, type DirectVia } from "./direct/direct-get.js";
import { DirectLink } from "./direct/direct-link.js";
import { parseJsHeaders } from "./headers.js";
import type { NatsSecurity } from "./nats-security.js";
import { RegionMirror, type RegionReadOptions } from "./region-reads.js";

/** Most channels a last-value read collects by scanning when `multi_last` refuses (more than 1024 match). */
export const MAX_LAST_VALUE_CHANNELS = 100_000;

/** Regions: messages a page reads from the home region at most, one request each, when the mirror lags past the wait. */
const ORIGIN_PAGE = 256;

/** A page of a catch-up: at most this many messages or bytes per direct get. */
export const PAGE_MESSAGES = 4_096;
export const PAGE_BYTES = 1_048_576;

/** `hdrs`: the stored headers' block in base64 (a binary payload's content type is there). */
type LeaderMsg = { subject: string; seq: number; data?: string; time: string; hdrs?: string };

/**
 * Replay and history on the JetStream stream, without consumers: batched direct gets. Nothing is created on
 * the server, so a storm of resuming clients costs reads, not consumers (nats-server 2.15 caps a stream at
 * 1,000 consumers by default). Stream state (bounds, epoch) is asked for through a `SharedQuery`.
 */
/** What a live feed reads from the stream (jetstream-live.ts): nothing else of the replay. */
export interface RepairReads {
  state(): Promise<StreamState>;
  /** Stored messages of the stream subject `subject` from `from`, ahead of queued catch-up reads. */
  read(subject: string, from: number): Promise<DirectBatch>;
}

export class JetStreamReplay implements ReplayApi {
  readonly direct: DirectGet;
  private readonly info: SharedQuery<StreamState>;
  private replicas = 1;
  /** Results of recent last-value scans, for their next pages. */
  private readonly scans = new ScanCache();
  /** Regions, outside the home region: the mirror that answers the direct gets here (region-reads.ts). */
  readonly mirror?: RegionMirror;
  /** The origin's epoch as last read (regions: the mirror's bounds go with it while the home region is away). */
  private epoch?: string;

  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
    private readonly mapper: SubjectMapper,
    private readonly log: Logger,
    {
      linkName,
      onSend,
      security,
      maxQueued,
      region,
    }: {
      /** Client name of a connection of its own for direct gets; without it they share `nc`. */
      linkName?: string;
      /** Called for every direct get put on the wire (metrics). */
      onSend?: (via: DirectVia) => void;
      /** Credentials and TLS for the link (those of `nc`). */
      security?: NatsSecurity;
      /** Direct gets waiting to be sent, at most (DIRECT_GET_QUEUE). */
      maxQueued?: number;
      /** Regions, outside the home region: this region's mirror of the stream. */
      region?: RegionReadOptions;
    } = {},
  ) {
    if (region) this.mirror = new RegionMirror(jsm, region);
    this.direct = new DirectGet(nc, stream, {
      // Each message carries its channel, so pages need no second object per message.
      channelOf: (subject) => mapper.toChannel(subject),
      fast: linkName
        ? (sink) => {
            const link = new DirectLink({ server: () => nc.getServer(), name: linkName, sink, log, security });
            link.start();
            return link;
          }
        : undefined,
      onSend,
      maxQueued,
    });
    this.info = new SharedQuery(async () => {
      let si;
      try {
        si = await this.jsm.streams.info(this.stream);
      } catch (e) {
        return this.mirrorBounds(e);
      }
      this.replicas = si.config.num_replicas || 1;
      this.epoch = si.created;
      return { firstSeq: si.state.first_seq, lastSeq: si.state.last_seq, epoch: si.created };
    });
  }

  /**
   * Regions: the home region does not answer for the stream (it is down, or cut off): this region's mirror's
   * bounds, with the origin's epoch last read, so that reads here go on. Without a mirror or an epoch, `e`.
   */
  private async mirrorBounds(e: unknown): Promise<StreamState> {
    const epoch = this.epoch;
    if (!this.mirror || epoch === undefined) throw e;
    const m = await this.mirror.state();
    this.log.debug({ err: e, stream: this.stream, mirror: this.mirror.opts.mirror }, "home region unavailable: the stream's bounds are this region's mirror's");
    return { firstSeq: m.firstSeq, lastSeq: m.lastSeq, epoch, mirrorOnly: true };
  }

  /** Regions: resolves once this region's mirror holds `seq` (up to REGION_RESUME_WAIT), else fails temporary. */
  async reach(_pattern: string, seq: number): Promise<void> {
    await this.mirror?.require(seq);
  }

  state(): Promise<StreamState> {
    return this.info.get();
  }

  /** Matching messages at and after `from`: the first one found, and how many there are. */
  private async countFrom(subject: string, from: number): Promise<{ first: number; count: number }> {
    const b = await this.direct.batch({ seq: from, subject, batch: 1 });
    const first = b.messages[0];
    return first ? { first: first.seq, count: 1 + b.pending } : { first: 0, count: 0 };
  }

  async startOfLastN(pattern: string, n: number): Promise<number> {
    return (await this.lastNBefore(this.mapper.toSubject(pattern), n)).start;
  }

  /**
   * The sequence from which `subject` has its last `n` messages before seq `end` (all of them: the stream's
   * end), and the first matching seq (0: none before `end`). A binary search of one-message direct gets,
   * counting `[x, end)` as the messages from x less those from `end`: a message stored during the search
   * counts in the first but not the second, which can only move the start later (a shorter page, never a gap).
   */
  private async lastNBefore(subject: string, n: number, end?: number): Promise<{ start: number; first: number }> {
    const { firstSeq, lastSeq } = await this.state();
    // An empty stream reports first_seq 0 (fresh) or last_seq + 1 (purged): nothing to count back over.
    if (lastSeq === 0 || lastSeq < firstSeq) return { start: Math.max(firstSeq, lastSeq + 1, 1), first: 0 };
    const top = end === undefined || end > lastSeq ? lastSeq : end - 1;
    const tail = end === undefined || end > lastSeq ? 0 : (await this.countFrom(subject, end)).count;
    const all = await this.countFrom(subject, firstSeq);
    const count = (c: { count: number }) => c.count - tail;
    if (all.count === 0 || all.first > top) return { start: top + 1, first: 0 };
    if (count(all) <= n) return { start: all.first, first: all.first };
    let lo = all.first;
    let hi = top;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      const c = await this.countFrom(subject, mid);
      if (count(c) >= n) lo = c.first;
      else hi = mid - 1;
    }
    return { start: lo, first: all.first };
  }

  async seqAtTime(pattern: string, time: string): Promise<number> {
    const b = await this.direct.batch({ startTime: time, subject: this.mapper.toSubject(pattern), batch: 1 });
    return b.messages[0]?.seq ?? (await this.state()).lastSeq + 1;
  }

  /** One direct-get batch of a (stream) filter subject from `from`, queued behind earlier reads. */
  private batch(subject: string, from: number): Promise<DirectBatch> {
    return this.direct.batch({ seq: from, subject, batch: PAGE_MESSAGES, maxBytes: PAGE_BYTES });
  }

  /**
   * The reads of the live feeds' repairs: the stream's state, and batches of a stream subject that go in
   * the direct-get queue's urgent lane, ahead of queued catch-up pages — a repair holds a whole feed, and
   * every socket on it waits. The one place that reads urgently.
   */
  readonly repairs: RepairReads = {
    state: () => this.state(),
    read: (subject, from) => this.direct.batch({ seq: from, subject, batch: PAGE_MESSAGES, maxBytes: PAGE_BYTES, urgent: true }),
  };

  async read(pattern: string, from: number, target: number): Promise<StoredPage> {
    const subject = this.mapper.toSubject(pattern);
    const b = await this.batch(subject, from);
    const messages: BrokerMessage[] = b.messages;
    const last = b.messages.at(-1)?.seq ?? from - 1;
    if (b.pending > 0) return { messages, coverEnd: last };
    if (last >= target) return { messages, coverEnd: last };
    if (this.mirror) return this.fromMirrorOrOrigin(subject, messages, last, target);
    if (this.replicas === 1) return { messages, coverEnd: target };
    // A replicated stream: the answer may come from a follower a little behind the leader, which has every
    // message up to the target (it republished them). Confirm "nothing more up to the target" with the leader.
    const next = await this.leaderNext(subject, last + 1);
    if (!next) return { messages, coverEnd: Math.max(last, target) };
    if (next.seq > target) return { messages, coverEnd: next.seq - 1 };
    messages.push(this.fromLeader(next));
    this.log.debug({ pattern, seq: next.seq }, "direct get answered by a replica behind the leader");
    return { messages, coverEnd: next.seq };
  }

  /**
   * Regions: the mirror answered up to `last` and nothing after, but `target` (the live feed's position, the
   * origin's numbering) is further: the rest may be stored at home and not copied yet. Waits for the mirror
   * up to REGION_RESUME_WAIT and reads on there; past the wait, reads the rest up to `target` from the
   * origin's leader, one message a request (ORIGIN_PAGE at most per page). Never "nothing there" unchecked.
   */
  private async fromMirrorOrOrigin(subject: string, messages: BrokerMessage[], last: number, target: number): Promise<StoredPage> {
    const mirror = this.mirror as RegionMirror;
    if (await mirror.reaches(target)) {
      const b = await this.batch(subject, last + 1);
      messages.push(...b.messages);
      const end = b.messages.at(-1)?.seq ?? last;
      return { messages, coverEnd: b.pending > 0 ? end : Math.max(end, target) };
    }
    this.log.debug({ stream: this.stream, mirror: mirror.opts.mirror, from: last + 1, target }, "mirror behind the read: reading from the home region");
    let at = last;
    for (let i = 0; i < ORIGIN_PAGE && at < target; i++) {
      const next = await this.leaderNext(subject, at + 1);
      if (!next || next.seq > target) return { messages, coverEnd: target };
      messages.push(this.fromLeader(next));
      at = next.seq;
    }
    return { messages, coverEnd: at };
  }

  private fromLeader(m: LeaderMsg): BrokerMessage {
    const hdrs = m.hdrs ? Buffer.from(m.hdrs, "base64") : undefined;
    const h = hdrs && hdrs.length > 8 ? parseJsHeaders(hdrs, hdrs.length) : undefined;
    const out: BrokerMessage = {
      channel: this.mapper.toChannel(m.subject),
      seq: m.seq,
      ts: Date.parse(m.time),
      payload: Buffer.from(m.data ?? "", "base64"),
      type: h?.type,
    };
    if (h?.publisher !== undefined) out.publisher = h.publisher;
    if (h?.tags !== undefined) out.tags = h.tags;
    return out;
  }

  /** The leader's first message on `subject` at or after `seq` (`$JS.API.STREAM.MSG.GET`), if any. */
  private async leaderNext(subject: string, seq: number): Promise<LeaderMsg | undefined> {
    const r = await this.nc.request(`$JS.API.STREAM.MSG.GET.${this.stream}`, JSON.stringify({ seq, next_by_subj: subject }), { timeout: 5_000 });
    const body = r.json<{ message?: LeaderMsg; error?: { code: number; err_code?: number; description?: string } }>();
    if (body.message) return body.message;
    if (body.error?.code === 404) return undefined;
    throw new Error(`stream message get failed: ${body.error?.description ?? "no answer"}`);
  }

  async history(channel: string, fromSeq: number, limit: number, maxBytes = Infinity): Promise<{ messages: BrokerMessage[]; more: boolean }> {
    const out: BrokerMessage[] = [];
    const subject = this.mapper.toSubject(channel);
    let from = fromSeq;
    let bytes = 0;
    while (out.length < limit) {
      const b = await this.direct.batch({ seq: from, subject, batch: limit - out.length, maxBytes: PAGE_BYTES });
      for (const m of b.messages) {
        if (out.length > 0 && bytes + m.payload.byteLength > maxBytes) return { messages: out, more: true };
        out.push(m);
        bytes += m.payload.byteLength;
      }
      const last = b.messages.at(-1);
      if (b.pending === 0 || last === undefined) return { messages: out, more: false };
      from = last.seq + 1;
    }
    // Stopped by `limit` with matching messages still after the last one read.
    return { messages: out, more: true };
  }

  async historyBack(channel: string, before: number, limit: number, maxBytes = Infinity): Promise<{ messages: BrokerMessage[]; more: boolean }> {
    const subject = this.mapper.toSubject(channel);
    const { start, first } = await this.lastNBefore(subject, limit, before);
    const window = new NewestWindow<BrokerMessage>(limit, maxBytes);
    for (let from = start; from < before;) {
      const b = await this.direct.batch({ seq: from, subject, batch: Math.min(limit, PAGE_MESSAGES), maxBytes: PAGE_BYTES });
      for (const m of b.messages) if (m.seq < before) window.push(m);
      const last = b.messages.at(-1);
      if (b.pending === 0 || last === undefined) break;
      from = last.seq + 1;
    }
    const messages = window.newestFirst();
    return { messages, more: window.dropped || (messages.length > 0 && start > first) };
  }

  async lastPerSubject(pattern: string, upTo: number, after: number, bounds: PageBounds = {}): Promise<LastValuePage> {
    if (upTo < 1 || after >= upTo) return { messages: [], more: false };
    const maxMessages = Math.min(bounds.maxMessages ?? PAGE_MESSAGES, PAGE_MESSAGES);
    const maxBytes = Math.min(bounds.maxBytes ?? PAGE_BYTES, PAGE_BYTES);
    const subject = this.mapper.toSubject(pattern);
    const key = `${subject} ${upTo}`;
    // A continuation of a scan: its index is in memory, no second pass over the stream.
    let index = after > 0 ? this.scans.get(key, after + 1) : undefined;
    if (!index) {
      const b = await this.direct.multiLast({ subjects: [subject], upTo, seq: after + 1, batch: maxMessages, maxBytes: PAGE_BYTES });
      if (!b.tooMany) {
        const p = pageOf(b.messages, after, maxMessages, maxBytes, payloadSize);
        return { messages: p.messages, more: p.more || (b.pending > 0 && b.messages.length > 0) };
      }
      index = await this.scanLastPerSubject(subject, upTo, after + 1);
      this.scans.put(key, after + 1, index);
    }
    // The page's channels by name (literal subjects: multi_last answers them, at most 1024 at once).
    const p = pageOf(index, after, Math.min(maxMessages, MULTI_LAST_SUBJECTS), maxBytes, (e) => e.size);
    const cursor = p.messages.at(-1)?.seq;
    return { messages: await this.newestOf(p.messages, upTo), more: p.more, ...(cursor === undefined ? {} : { cursor }) };
  }

  /**
   * The messages of these index entries (at most 1024), read by subject, in stream order. One whose message
   * retention removed since the scan is left out (as a channel retention emptied before the scan is): an
   * older message of its channel would break the stream order the pages follow.
   */
  private async newestOf(entries: readonly ScanEntry[], upTo: number): Promise<BrokerMessage[]> {
    const seqOf = new Map(entries.map((e) => [e.subject, e.seq]));
    const subjects = [...seqOf.keys()];
    const out: BrokerMessage[] = [];
    let seq = entries[0]?.seq ?? 1;
    for (let got = 0; got < subjects.length;) {
      const b = await this.direct.multiLast({ subjects, upTo, seq, batch: subjects.length - got, maxBytes: PAGE_BYTES });
      got += b.messages.length;
      for (const m of b.messages) if (seqOf.get(m.subject) === m.seq) out.push(m);
      const last = b.messages.at(-1);
      if (last === undefined || b.pending === 0) break;
      seq = last.seq + 1;
    }
    return out;
  }

  /**
   * The server answers multi_last for at most 1024 subjects: beyond that, read every stored message of the
   * pattern up to `upTo` and note the newest seq (and size) per subject (bounded by MAX_LAST_VALUE_CHANNELS),
   * in stream order: an index without payloads. Pages of it are then read by name (`newestOf`), and
   * `scans` keeps it for the next pages.
   */
  private async scanLastPerSubject(subject: string, upTo: number, from: number): Promise<ScanEntry[]> {
    const last = new Map<string, ScanEntry>();
    for (let seq = from; seq <= upTo;) {
      const b = await this.batch(subject, seq);
      for (const m of b.messages) {
        if (m.seq > upTo) break;
        last.delete(m.subject); // re-inserted: the map stays in order of each subject's newest seq
        last.set(m.subject, { subject: m.subject, seq: m.seq, size: m.payload.byteLength });
      }
      if (last.size > MAX_LAST_VALUE_CHANNELS)
        throw new GatewayError(
          ErrorCode.BadRequest,
          `more than ${MAX_LAST_VALUE_CHANNELS} channels match ${this.mapper.toChannel(subject)}: narrow the pattern`,
        );
      const end = b.messages.at(-1)?.seq;
      if (end === undefined || b.pending === 0) break;
      seq = end + 1;
    }
    return [...last.values()];
  }

  close(): void {
    this.direct.close();
  }
}

/**
 * The page of `all` (in stream order) after seq `after`: at most `maxMessages`, and no more than `maxBytes`
 * (by `sizeOf`) beyond the first entry. Seqs are the cursor, so the next page starts exactly after this one.
 */
export function pageOf<M extends { seq: number }>(
  all: readonly M[],
  after: number,
  maxMessages: number,
  maxBytes: number,
  sizeOf: (m: M) => number,
): { messages: M[]; more: boolean } {
  let lo = 0;
  let hi = all.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((all[mid]?.seq ?? Infinity) <= after) lo = mid + 1;
    else hi = mid;
  }
  const messages: M[] = [];
  let bytes = 0;
  for (let i = lo; i < all.length && messages.length < maxMessages; i++) {
    const m = all[i];
    if (m === undefined) break;
    const size = sizeOf(m);
    if (messages.length > 0 && bytes + size > maxBytes) break;
    messages.push(m);
    bytes += size;
  }
  return { messages, more: lo + messages.length < all.length };
}

const payloadSize = (m: { payload: Uint8Array }): number => m.payload.byteLength;

/**
 * The newest messages of those pushed in stream order: at most `limit`, and no more than `maxBytes` of
 * payload beyond the newest one (which is always kept, whatever its size). `dropped` says an older one was
 * let go, so a page read backwards is cut short and continues before its oldest message.
 */
export class NewestWindow<M extends { payload: Uint8Array }> {
  private readonly kept: M[] = [];
  private bytes = 0;
  dropped = false;

  constructor(
    private readonly limit: number,
    private readonly maxBytes: number,
  ) {}

  push(m: M): void {
    this.kept.push(m);
    this.bytes += m.payload.byteLength;
    while (this.kept.length > this.limit || (this.kept.length > 1 && this.bytes > this.maxBytes)) {
      const old = this.kept.shift();
      if (old) this.bytes -= old.payload.byteLength;
      this.dropped = true;
    }
  }

  newestFirst(): M[] {
    return [...this.kept].reverse();
  }
}

/** One channel of a last-value scan: its subject, and the seq and payload size of its newest message. */
type ScanEntry = { subject: string; seq: number; size: number };

/** Subjects a multi_last request may name at once (nats-server answers at most 1024). */
const MULTI_LAST_SUBJECTS = 1_024;

/** Scans kept this long for their next pages; a new snapshot (after = 0) always scans again. */
const SCAN_TTL_MS = 30_000;
/** Scan entries kept in all (per worker, ~100 bytes each): a few indexes of up to MAX_LAST_VALUE_CHANNELS. */
const SCAN_CACHE_ENTRIES = 4 * MAX_LAST_VALUE_CHANNELS;

/** A few recent scan results by (subject, upTo): the pages of one snapshot cost one pass over the stream. */
class ScanCache {
  private readonly entries = new Map<string, { from: number; index: ScanEntry[]; at: number }>();
  private size = 0;

  /** The kept scan of `key` if it started at or before `from` (one that started later lacks channels). */
  get(key: string, from: number): ScanEntry[] | undefined {
    const e = this.entries.get(key);
    if (!e || e.from > from) return undefined;
    if (Date.now() - e.at > SCAN_TTL_MS) {
      this.drop(key);
      return undefined;
    }
    return e.index;
  }

  put(key: string, from: number, index: ScanEntry[]): void {
    this.drop(key);
    for (const k of this.entries.keys()) {
      if (this.size + index.length <= SCAN_CACHE_ENTRIES) break;
      this.drop(k);
    }
    this.entries.set(key, { from, index, at: Date.now() });
    this.size += index.length;
  }

  private drop(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.size -= e.index.length;
  }
}
