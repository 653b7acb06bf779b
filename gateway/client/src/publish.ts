import { base64Encode } from "./deltas.js";
import { GatewayError, wireError } from "./errors.js";
import type { BatchItem, BatchItemResult, Frame, PublishResult } from "./types.js";

export type Pub = {
  channel: string;
  data: unknown;
  msgId: string;
  ttl?: string;
  type?: string;
  resolve: (r: PublishResult) => void;
  reject: (e: Error) => void;
};
export type BatchPub = { batch: (BatchItem & { msgId: string })[]; resolve: (r: BatchItemResult[]) => void; reject: (e: Error) => void };

/**
 * Publishes not answered yet, in call order. While disconnected it holds at most `limit` of them (a batch
 * counts as one); on every open all of them are sent again, each with its msgId, so the server stores each
 * once whether or not the first try reached it.
 */
export class Outbox {
  /** Set keeps insertion order: re-sent in call order. */
  private readonly items = new Set<Pub | BatchPub>();

  constructor(private readonly limit: number) {}

  get size(): number {
    return this.items.size;
  }

  /**
   * Adds a publish (a batch when `items` is an array); `open` says whether it goes out at once. Returns the
   * entry to send, or rejects with `queue_full` when disconnected and full.
   */
  add<R>(make: (resolve: (r: R) => void, reject: (e: Error) => void) => Pub | BatchPub, open: boolean): { promise: Promise<R>; pub?: Pub | BatchPub } {
    if (!open && this.items.size >= this.limit) {
      return { promise: Promise.reject(new GatewayError("queue_full", `publish queue is full (${this.limit} waiting while disconnected)`)) };
    }
    let pub!: Pub | BatchPub;
    const promise = new Promise<R>((resolve, reject) => {
      pub = make(resolve, reject);
      this.items.add(pub);
    });
    return { promise, pub };
  }

  /** Every unanswered publish, in call order. */
  [Symbol.iterator](): IterableIterator<Pub | BatchPub> {
    return this.items.values();
  }

  /** The server answered `pub`: settle it and forget it. */
  settle(pub: Pub | BatchPub, reply: Frame): void {
    this.items.delete(pub);
    if ("batch" in pub) {
      if (reply.op !== "ok" || !Array.isArray(reply.results)) return pub.reject(wireError(reply));
      return pub.resolve(batchResults(reply.results as Frame[]));
    }
    if (reply.op === "ok") pub.resolve({ seq: Number(reply.seq), duplicate: reply.duplicate === true });
    else pub.reject(wireError(reply));
  }

  /** The client stopped: every publish fails with `error`. */
  rejectAll(error: GatewayError): void {
    for (const pub of this.items) pub.reject(error);
    this.items.clear();
  }
}

/**
 * The `pub` frame of a publish or a batch (without its request id). `bin`: the wire carries bytes
 * (fanout.v1.msgpack), so a Uint8Array goes as a bin; on fanout.v1 it goes in base64 with `"enc":"base64"`.
 */
export function pubFrame(pub: Pub | BatchPub, bin = false): Record<string, unknown> {
  if ("batch" in pub) return { op: "pub", batch: pub.batch.map((i) => item(i, bin)) };
  return { op: "pub", ...item(pub, bin) };
}

/** A publish's fields; bytes (PROTOCOL.md "Binary payloads") with their content type. */
function item({ channel, data, msgId, ttl, type }: BatchItem, bin: boolean): Record<string, unknown> {
  const f: Record<string, unknown> = { channel, data, msgId };
  if (ttl !== undefined) f.ttl = ttl;
  if (data instanceof Uint8Array) {
    f.type = type ?? "application/octet-stream";
    if (!bin) Object.assign(f, { enc: "base64", data: base64Encode(data) });
  }
  return f;
}

/** A batch's per-item results, in item order: the stored seq, or that item's own error. */
export function batchResults(results: Frame[]): BatchItemResult[] {
  return results.map((r) =>
    typeof r.error === "string" ? { error: wireError({ ...r, code: r.error }) } : { seq: Number(r.seq), duplicate: r.duplicate === true },
  );
}

/** A msgId for a publish: a random UUID where the platform has one. */
export function newMsgId(): string {
  const c = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  if (c?.randomUUID) return c.randomUUID(); // absent on plain-http pages that are not localhost, and in React Native
  let s = "";
  for (let i = 0; i < 4; i++)
    s += Math.floor(Math.random() * 2 ** 32)
      .toString(16)
      .padStart(8, "0");
  return `${Date.now().toString(36)}-${s}`;
}
