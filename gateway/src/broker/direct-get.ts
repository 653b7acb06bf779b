import { createInbox, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import { jsHeaders } from "./js-headers.js";

/** One stored message as a direct get returns it. */
export type StoredMsg = { subject: string; seq: number; ts: number; payload: Uint8Array; /** The subject's channel (`channelOf`). */ channel: string };

/** A batch: messages in stream order, and how many matching messages follow the last one (0: none now). */
export type DirectBatch = { messages: StoredMsg[]; pending: number };

export type DirectBatchRequest = {
  /** First sequence to look at (or `startTime`). */
  seq?: number;
  startTime?: string;
  /** Filter subject, wildcards allowed. */
  subject: string;
  batch: number;
  maxBytes?: number;
  /** Sent before every queued request that is not urgent (the live feeds' repairs). */
  urgent?: boolean;
};

/** `multi_last`: the newest message of every subject matching `subjects`, at or before `upTo`, from `seq` on. */
export type MultiLastRequest = { subjects: string[]; upTo: number; seq?: number; batch: number; maxBytes?: number };

/** A multi_last answer; `tooMany` when more subjects match than the server answers at once (413). */
export type MultiLastBatch = DirectBatch & { tooMany?: boolean };

type Pending = { out: StoredMsg[]; resolve(b: MultiLastBatch): void; reject(e: Error): void; timer?: NodeJS.Timeout };
type Queued = { token: string; what: string; body: string; p: Pending };

/**
 * Requests on the wire at once per connection. nats-server answers one connection's direct gets one after
 * another, and a batch on a sparse subject costs it time in proportion to the messages it skips (~10 ms for
 * 100 messages of one of 1,000 interleaved channels): a storm of 1,000 catch-ups sent at once was answered
 * over 8 s, past the timeout, and every retry queued the same read again behind the abandoned ones. Beyond
 * this many, requests wait here, unsent, and their timeout starts when they are sent.
 */
export const DIRECT_GET_INFLIGHT = 8;

export type DirectGetOptions = {
  /** A request on the wire unanswered this long fails (5 s). */
  timeoutMs?: number;
  /** Requests on the wire at once (DIRECT_GET_INFLIGHT). */
  maxInflight?: number;
  /** Maps a stored subject to the channel carried with each message (made once per run of one subject). */
  channelOf?: (subject: string) => string;
};

/**
 * Batched direct gets (`$JS.API.DIRECT.GET.<stream>` with `next_by_subj`, `batch`, `max_bytes`): reads
 * stored messages without creating anything on the server — no consumer, no state left behind. Any
 * replica with the stream answers when `allow_direct` is set. One wildcard inbox subscription serves all
 * requests of a connection; replies are told apart by the inbox token.
 */
export class DirectGet {
  private readonly prefix = createInbox();
  private readonly sub: Subscription;
  private readonly pending = new Map<string, Pending>();
  private nextId = 1;
  private readonly subject: string;
  private readonly queue: Queued[] = [];
  private urgentCount = 0;
  private sent = 0;
  private lastSubject = "";
  private lastChannel = "";

  private readonly timeoutMs: number;
  private readonly maxInflight: number;
  private readonly channelOf: (subject: string) => string;

  constructor(
    private readonly nc: NatsConnection,
    stream: string,
    opts: DirectGetOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 5_000;
    this.maxInflight = opts.maxInflight ?? DIRECT_GET_INFLIGHT;
    this.channelOf = opts.channelOf ?? ((s) => s);
    this.subject = `$JS.API.DIRECT.GET.${stream}`;
    this.sub = nc.subscribe(`${this.prefix}.*`, { callback: (err, m) => (err ? undefined : this.onMsg(m)) });
  }

  batch(r: DirectBatchRequest): Promise<DirectBatch> {
    const body: Record<string, unknown> = { next_by_subj: r.subject, batch: r.batch };
    if (r.startTime !== undefined) body.start_time = r.startTime;
    else body.seq = Math.max(1, r.seq ?? 1);
    if (r.maxBytes) body.max_bytes = r.maxBytes;
    return this.request(body, r.subject, r.urgent);
  }

  /**
   * `multi_last` with `up_to_seq` (nats-server ≥ 2.11): in stream order, paged by `batch`/`max_bytes`; the
   * next page starts at the last seq + 1 with the same `upTo`. The server refuses (413) when more than 1024
   * subjects match: the answer then says `tooMany`.
   */
  multiLast(r: MultiLastRequest): Promise<MultiLastBatch> {
    const body: Record<string, unknown> = { multi_last: r.subjects, up_to_seq: r.upTo, batch: r.batch };
    if (r.seq !== undefined) body.seq = r.seq;
    if (r.maxBytes) body.max_bytes = r.maxBytes;
    return this.request(body, r.subjects.join(","));
  }

  private request(body: Record<string, unknown>, what: string, urgent = false): Promise<MultiLastBatch> {
    const token = (this.nextId++).toString(36);
    return new Promise<MultiLastBatch>((resolve, reject) => {
      const q: Queued = { token, what, body: JSON.stringify(body), p: { out: [], resolve, reject } };
      if (this.sent < this.maxInflight) return this.send(q);
      // Urgent requests go ahead of the others, in their own order.
      if (urgent) this.queue.splice(this.urgentCount++, 0, q);
      else this.queue.push(q);
    });
  }

  /** Requests waiting to be sent (metrics, tests). */
  get queued(): number {
    return this.queue.length;
  }

  private send(q: Queued): void {
    const { token, p } = q;
    this.sent++;
    p.timer = setTimeout(() => {
      this.settle(token);
      p.reject(new GatewayError(ErrorCode.BrokerError, `direct get on ${q.what} timed out after ${this.timeoutMs} ms`));
    }, this.timeoutMs);
    this.pending.set(token, p);
    try {
      this.nc.publish(this.subject, q.body, { reply: `${this.prefix}.${token}` });
    } catch (e) {
      this.settle(token);
      p.reject(e as Error);
    }
  }

  /** A request on the wire got its answer, failed or timed out: the next queued one goes out. */
  private settle(token: string): void {
    const p = this.pending.get(token);
    if (!p) return;
    clearTimeout(p.timer);
    this.pending.delete(token);
    if (token === this.lastToken) this.lastPending = undefined;
    this.sent--;
    const next = this.queue.shift();
    if (!next) return;
    if (this.urgentCount > 0) this.urgentCount--;
    this.send(next);
  }

  /** The reply subject of the last message and its request: a batch's thousands of messages share one. */
  private lastReply = "";
  private lastToken = "";
  private lastPending?: Pending;

  private onMsg(m: Msg): void {
    let token: string;
    let p: Pending | undefined;
    if (this.lastPending && m.subject === this.lastReply) {
      token = this.lastToken;
      p = this.lastPending;
    } else {
      token = m.subject.slice(this.prefix.length + 1);
      p = this.pending.get(token);
      this.lastReply = m.subject;
      this.lastToken = token;
      this.lastPending = p;
    }
    if (!p) return;
    const h = jsHeaders(m);
    const code = h?.code ?? 0;
    if (code === 0 && h) {
      if (h.subject !== this.lastSubject) {
        this.lastSubject = h.subject;
        this.lastChannel = this.channelOf(h.subject);
      }
      p.out.push({ subject: h.subject, seq: h.seq, ts: h.ts, payload: m.data, channel: this.lastChannel });
      return;
    }
    this.settle(token);
    if (code === 204) p.resolve({ messages: p.out, pending: h!.pending });
    else if (code === 404) p.resolve({ messages: p.out, pending: 0 });
    else if (code === 413) p.resolve({ messages: p.out, pending: 0, tooMany: true });
    else
      p.reject(
        new GatewayError(ErrorCode.BrokerError, `direct get failed: ${code} ${m.headers?.description ?? ""}`.trim(), {
          temporary: code >= 500 || code === 408,
        }),
      );
  }

  close(): void {
    this.sub.unsubscribe();
    const closed = new GatewayError(ErrorCode.BrokerUnavailable, "connection closed");
    const waiting = [...this.pending.values(), ...this.queue.map((q) => q.p)];
    this.queue.length = 0;
    this.urgentCount = 0;
    for (const p of this.pending.values()) clearTimeout(p.timer);
    this.pending.clear();
    this.lastPending = undefined;
    this.sent = 0;
    for (const p of waiting) p.reject(closed);
  }
}
