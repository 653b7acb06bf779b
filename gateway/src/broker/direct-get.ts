import { createInbox, type Msg, type MsgHdrs, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { GatewayError } from "../errors.js";

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

type Pending = { out: StoredMsg[]; resolve(b: DirectBatch): void; reject(e: Error): void; timer: NodeJS.Timeout };

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

  constructor(private readonly nc: NatsConnection, stream: string, private readonly timeoutMs = 5_000) {
    this.subject = `$JS.API.DIRECT.GET.${stream}`;
    this.sub = nc.subscribe(`${this.prefix}.*`, { callback: (err, m) => (err ? undefined : this.onMsg(m)) });
  }

  batch(r: DirectBatchRequest): Promise<DirectBatch> {
    const token = (this.nextId++).toString(36);
    const body: Record<string, unknown> = { next_by_subj: r.subject, batch: r.batch };
    if (r.startTime !== undefined) body.start_time = r.startTime;
    else body.seq = Math.max(1, r.seq ?? 1);
    if (r.maxBytes) body.max_bytes = r.maxBytes;
    return new Promise<DirectBatch>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(token);
        reject(new GatewayError("ERR_BROKER_TIMEOUT", `direct get on ${r.subject} timed out after ${this.timeoutMs} ms`));
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
    const h = m.headers;
    const code = h?.code ?? 0;
    if (code === 0 && h) {
      p.out.push({ subject: h.get("Nats-Subject"), seq: Number(h.get("Nats-Sequence")), ts: parseTimestampMs(h.get("Nats-Time-Stamp")), payload: m.data });
      return;
    }
    clearTimeout(p.timer);
    this.pending.delete(token);
    if (code === 204) p.resolve({ messages: p.out, pending: Number(h!.get("Nats-Num-Pending") || 0) });
    else if (code === 404) p.resolve({ messages: p.out, pending: 0 });
    else p.reject(new GatewayError("ERR_BROKER", `direct get failed: ${code} ${h?.description ?? ""}`.trim()));
  }

  close(): void {
    this.sub.unsubscribe();
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new GatewayError("ERR_BROKER_UNAVAILABLE", "connection closed"));
    }
    this.pending.clear();
  }
}

/** Header helper for republished messages. */
export const headerNumber = (h: MsgHdrs, name: string): number => Number(h.get(name) || 0);

/**
 * `2026-11-22T18:02:18.478069664Z` (RFC 3339, UTC, up to ns) as ms since the epoch with µs precision,
 * the form every frame carries. Date.parse alone would drop the µs.
 */
export function parseTimestampMs(s: string): number {
  const dot = s.indexOf(".", 19);
  if (dot !== 19) return Date.parse(s);
  const ms = Date.parse(`${s.slice(0, 19)}Z`);
  let us = 0;
  let digits = 0;
  for (let i = 20; digits < 6; i++, digits++) {
    const c = s.charCodeAt(i);
    if (!(c >= 48 && c <= 57)) break;
    us = us * 10 + (c - 48);
  }
  for (; digits < 6; digits++) us *= 10;
  return (ms * 1_000 + us) / 1_000;
}
