import { createInbox, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { GatewayError } from "../../../errors.js";
import { ErrorCode } from "../../../protocol/codes.js";
import { jsHeaders, type JsHeaders } from "../headers.js";
import type { StoredPublisher } from "../../../protocol/publisher-info.js";
import type { StoredTags } from "../../../protocol/tags.js";
import { guarded } from "../../../util/guarded.js";

/** One stored message as a direct get returns it. */
export type StoredMsg = {
  subject: string;
  seq: number;
  ts: number;
  payload: Uint8Array;
  /** The subject's channel (`channelOf`). */
  channel: string;
  /** A binary payload's content type (`Fanout-Content-Type`); absent for JSON (and then no key at all). */
  type?: string;
  /** The WebSocket client that published it (`Fanout-Publisher`); absent otherwise. */
  publisher?: StoredPublisher;
  /** Its tags (`Fanout-Tags`); absent otherwise. */
  tags?: StoredTags;
};

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

type Pending = { out: StoredMsg[]; resolve(b: MultiLastBatch): void; reject(e: Error): void; timer?: NodeJS.Timeout; via?: DirectTransport };

/**
 * How DirectGet puts a request on the wire and hears its replies: through nats.js' connection
 * (`NatsJsTransport`), or through a connection of its own that reads replies without nats.js
 * (`DirectLink`, direct-link.ts). Each has its own inbox, so a reply reaches only the one that asked.
 */
export interface DirectTransport {
  /** Requests can be sent now. */
  readonly ready: boolean;
  /** Sends `body` to `subject`; its replies come to the sink under `token`. Throws when it cannot. */
  send(subject: string, body: string, token: string): void;
  close(): void;
}

/** Where transports deliver what they hear. */
export interface ReplySink {
  /** One reply message of the request `token`: a stored message (code 0) or the status ending the batch. */
  reply(token: string, h: JsHeaders, payload: Uint8Array): void;
  /** The transport's connection is gone: what it had on the wire will get no answer. */
  lost(t: DirectTransport, why: string): void;
}

/** Requests and replies on nats.js' connection, one wildcard inbox subscription for all of them. */
export class NatsJsTransport implements DirectTransport {
  private readonly prefix = createInbox();
  private readonly sub: Subscription;
  /** A batch's thousands of messages share one reply subject: its token is sliced once. */
  private lastReply = "";
  private lastToken = "";

  constructor(
    private readonly nc: NatsConnection,
    private readonly sink: ReplySink,
  ) {
    this.sub = nc.subscribe(`${this.prefix}.*`, { callback: guarded("direct get reply", (err, m) => (err ? undefined : this.onMsg(m))) });
  }

  get ready(): boolean {
    return !this.nc.isClosed();
  }

  send(subject: string, body: string, token: string): void {
    this.nc.publish(subject, body, { reply: `${this.prefix}.${token}` });
  }

  private onMsg(m: Msg): void {
    if (m.subject !== this.lastReply) {
      this.lastReply = m.subject;
      this.lastToken = m.subject.slice(this.prefix.length + 1);
    }
    const h = jsHeaders(m);
    // A reply without headers is not a direct-get answer: treated as a failed request.
    this.sink.reply(this.lastToken, h ?? { code: 500, subject: "", seq: 0, ts: 0, pending: 0, last: 0, description: "reply without headers" }, m.data);
  }

  close(): void {
    this.sub.unsubscribe();
  }
}

type Queued = { token: string; what: string; body: string; p: Pending };

/**
 * Requests on the wire at once per connection. nats-server answers one connection's direct gets one after
 * another, and a batch on a sparse subject costs it time in proportion to the messages it skips (~10 ms for
 * 100 messages of one of 1,000 interleaved channels): a storm of 1,000 catch-ups sent at once was answered
 * over 8 s, past the timeout, and every retry queued the same read again behind the abandoned ones. Beyond
 * this many, requests wait here, unsent, and their timeout starts when they are sent.
 */
export const DIRECT_GET_INFLIGHT = 8;

/** Requests waiting behind the window, at most, unless configured (DIRECT_GET_QUEUE). */
export const DIRECT_GET_QUEUE = 4_096;

export type DirectGetOptions = {
  /** A request on the wire unanswered this long fails (5 s). */
  timeoutMs?: number;
  /** Requests on the wire at once (DIRECT_GET_INFLIGHT). */
  maxInflight?: number;
  /**
   * Requests waiting to be sent, at most (DIRECT_GET_QUEUE, the DIRECT_GET_QUEUE setting); one more fails at
   * once with a temporary `broker_unavailable`. Urgent requests (the live feeds' repairs) are never refused.
   */
  maxQueued?: number;
  /** Maps a stored subject to the channel carried with each message (made once per run of one subject). */
  channelOf?: (subject: string) => string;
  /** Makes the transport used while it is ready (the gateway's own connection for direct gets). */
  fast?: (sink: ReplySink) => DirectTransport;
  /** Called for every request put on the wire, with the transport it went through (metrics). */
  onSend?: (via: DirectVia) => void;
};

/** Which transport a request went through: the fast one (the link) or nats.js' connection. */
export type DirectVia = "link" | "main";

/**
 * Batched direct gets (`$JS.API.DIRECT.GET.<stream>` with `next_by_subj`, `batch`, `max_bytes`): reads
 * stored messages without creating anything on the server — no consumer, no state left behind. Any
 * replica with the stream answers when `allow_direct` is set. Requests go through the fast transport
 * (`opts.fast`, the gateway's own connection for them) while it is up, through nats.js' connection
 * otherwise; replies are told apart by the inbox token.
 */
export class DirectGet implements ReplySink {
  private readonly shared: NatsJsTransport;
  private readonly fast?: DirectTransport;
  private readonly pending = new Map<string, Pending>();
  private nextId = 1;
  private readonly subject: string;
  private readonly queue: Queued[] = [];
  private urgentCount = 0;
  private sent = 0;
  private lastSubject = "";
  private lastChannel = "";
  /** The request of the last reply: a batch's thousands of messages share one. */
  private lastToken = "";
  private lastPending?: Pending;

  private readonly timeoutMs: number;
  private readonly maxInflight: number;
  private readonly maxQueued: number;
  private readonly channelOf: (subject: string) => string;
  private readonly onSend?: (via: DirectVia) => void;

  constructor(nc: NatsConnection, stream: string, opts: DirectGetOptions = {}) {
    this.timeoutMs = opts.timeoutMs ?? 5_000;
    this.maxInflight = opts.maxInflight ?? DIRECT_GET_INFLIGHT;
    this.maxQueued = opts.maxQueued ?? DIRECT_GET_QUEUE;
    this.channelOf = opts.channelOf ?? ((s) => s);
    this.subject = `$JS.API.DIRECT.GET.${stream}`;
    this.shared = new NatsJsTransport(nc, this);
    this.fast = opts.fast?.(this);
    this.onSend = opts.onSend;
  }

  /** The fast transport is there and ready (metrics). */
  get fastReady(): boolean {
    return this.fast?.ready ?? false;
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
      // Urgent requests go ahead of the others, in their own order, and are never refused: a repair holds a
      // whole live feed. The bound is on the others (catch-up pages, history), which retry.
      if (urgent) return void this.queue.splice(this.urgentCount++, 0, q);
      if (this.queue.length - this.urgentCount >= this.maxQueued) {
        this.refused++;
        return reject(new GatewayError(ErrorCode.BrokerUnavailable, `too many stored-message reads waiting (${this.maxQueued}); retry`));
      }
      this.queue.push(q);
    });
  }

  /** Requests waiting to be sent (metrics, tests). */
  get queued(): number {
    return this.queue.length;
  }

  /** Requests refused because the queue was full, so far (metrics, tests). */
  refused = 0;

  private send(q: Queued): void {
    const { token, p } = q;
    this.sent++;
    p.timer = setTimeout(() => {
      this.settle(token);
      p.reject(new GatewayError(ErrorCode.BrokerError, `direct get on ${q.what} timed out after ${this.timeoutMs} ms`));
    }, this.timeoutMs);
    this.pending.set(token, p);
    p.via = this.fast?.ready ? this.fast : this.shared;
    this.onSend?.(p.via === this.shared ? "main" : "link");
    try {
      p.via.send(this.subject, q.body, token);
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

  reply(token: string, h: JsHeaders, payload: Uint8Array): void {
    let p = this.lastPending;
    if (!p || token !== this.lastToken) {
      p = this.pending.get(token);
      this.lastToken = token;
      this.lastPending = p;
    }
    if (!p) return;
    if (h.code === 0) {
      if (h.subject !== this.lastSubject) {
        this.lastSubject = h.subject;
        this.lastChannel = this.channelOf(h.subject);
      }
      const m: StoredMsg = { subject: h.subject, seq: h.seq, ts: h.ts, payload, channel: this.lastChannel };
      if (h.type !== undefined) m.type = h.type;
      if (h.publisher !== undefined) m.publisher = h.publisher;
      if (h.tags !== undefined) m.tags = h.tags;
      p.out.push(m);
      return;
    }
    this.settle(token);
    if (h.code === 204) p.resolve({ messages: p.out, pending: h.pending });
    else if (h.code === 404) p.resolve({ messages: p.out, pending: 0 });
    else if (h.code === 413) p.resolve({ messages: p.out, pending: 0, tooMany: true });
    else
      p.reject(
        new GatewayError(ErrorCode.BrokerError, `direct get failed: ${h.code} ${h.description}`.trim(), {
          temporary: h.code >= 500 || h.code === 408,
        }),
      );
  }

  /** Requests on the lost transport's wire fail (temporary: a retry goes through the other one). */
  lost(t: DirectTransport, why: string): void {
    for (const [token, p] of [...this.pending]) {
      if (p.via !== t) continue;
      this.settle(token);
      p.reject(new GatewayError(ErrorCode.BrokerUnavailable, `direct get connection lost: ${why}`));
    }
  }

  close(): void {
    this.shared.close();
    this.fast?.close();
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
