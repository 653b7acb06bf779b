import { createInbox, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import { jsHeaders } from "./js-headers.js";

/** One stored message as a direct get returns it. */
export type StoredMsg = { subject: string; seq: number; ts: number; payload: Uint8Array };

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
};

/** `multi_last`: the newest message of every subject matching `subjects`, at or before `upTo`, from `seq` on. */
export type MultiLastRequest = { subjects: string[]; upTo: number; seq?: number; batch: number; maxBytes?: number };

/** A multi_last answer; `tooMany` when more subjects match than the server answers at once (413). */
export type MultiLastBatch = DirectBatch & { tooMany?: boolean };

type Pending = { out: StoredMsg[]; resolve(b: MultiLastBatch): void; reject(e: Error): void; timer: NodeJS.Timeout };

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

  constructor(
    private readonly nc: NatsConnection,
    stream: string,
    private readonly timeoutMs = 5_000,
  ) {
    this.subject = `$JS.API.DIRECT.GET.${stream}`;
    this.sub = nc.subscribe(`${this.prefix}.*`, { callback: (err, m) => (err ? undefined : this.onMsg(m)) });
  }

  batch(r: DirectBatchRequest): Promise<DirectBatch> {
    const body: Record<string, unknown> = { next_by_subj: r.subject, batch: r.batch };
    if (r.startTime !== undefined) body.start_time = r.startTime;
    else body.seq = Math.max(1, r.seq ?? 1);
    if (r.maxBytes) body.max_bytes = r.maxBytes;
    return this.send(body, r.subject);
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
    return this.send(body, r.subjects.join(","));
  }

  private send(body: Record<string, unknown>, what: string): Promise<MultiLastBatch> {
    const token = (this.nextId++).toString(36);
    return new Promise<MultiLastBatch>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(token);
        reject(new GatewayError(ErrorCode.BrokerError, `direct get on ${what} timed out after ${this.timeoutMs} ms`));
      }, this.timeoutMs);
      this.pending.set(token, { out: [], resolve, reject, timer });
      try {
        this.nc.publish(this.subject, JSON.stringify(body), { reply: `${this.prefix}.${token}` });
      } catch (e) {
        clearTimeout(timer);
        this.pending.delete(token);
        reject(e as Error);
      }
    });
  }

  private onMsg(m: Msg): void {
    const token = m.subject.slice(this.prefix.length + 1);
    const p = this.pending.get(token);
    if (!p) return;
    const h = jsHeaders(m);
    const code = h?.code ?? 0;
    if (code === 0 && h) {
      p.out.push({ subject: h.subject, seq: h.seq, ts: h.ts, payload: m.data });
      return;
    }
    clearTimeout(p.timer);
    this.pending.delete(token);
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
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new GatewayError(ErrorCode.BrokerUnavailable, "connection closed"));
    }
    this.pending.clear();
  }
}
