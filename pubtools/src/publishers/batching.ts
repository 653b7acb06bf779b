// --batch N for the gateway targets: publishes are gathered into batches of N (what one event-loop turn of
// the worker's loop queues, at most N) and sent as one batch request (WS `pub` with `batch`, or
// POST /v1/publish); each publish settles with its own item's result.
import type { Publisher } from "./types.js";
import { PublishError } from "./types.js";

/** One item of a batch: the channel, the JSON payload as text, the dedup id. */
export type BatchEntry = { channel: string; body: string; msgId: string | undefined };

/** A publisher that can send a batch: resolves with one result per item (null: stored). */
export interface BatchCapable extends Publisher {
  publishBatch(items: readonly BatchEntry[]): Promise<(PublishError | null)[]>;
}

/** An item's result as the gateway answers it: `{seq,duplicate}` or `{error,message}`. */
export function itemOutcome(r: { error?: string; message?: string } | undefined): PublishError | null {
  if (r === undefined) return new PublishError("no result for this item", "missing");
  return typeof r.error === "string" ? new PublishError(`${r.error}: ${r.message ?? ""}`, r.error) : null;
}

/** The JSON text of one batch item (the payload is already JSON text). */
export function itemJson(e: BatchEntry, channelJson: string): string {
  return `{"channel":${channelJson},"data":${e.body}${e.msgId ? `,"msgId":${JSON.stringify(e.msgId)}` : ""}}`;
}

type Waiting = BatchEntry & { resolve(): void; reject(e: Error): void };

export class BatchingPublisher implements Publisher {
  readonly acks: boolean;
  private queue: Waiting[] = [];
  private scheduled = false;

  constructor(
    private readonly inner: BatchCapable,
    private readonly size: number,
  ) {
    this.acks = inner.acks;
  }

  connect(): Promise<void> {
    return this.inner.connect();
  }

  publish(channel: string, body: string, msgId: string | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ channel, body, msgId, resolve, reject });
      if (this.queue.length >= this.size) this.send();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          this.send();
        });
      }
    });
  }

  private send(): void {
    const batch = this.queue.splice(0, this.size);
    if (batch.length === 0) return;
    this.inner.publishBatch(batch).then(
      (results) => batch.forEach((w, i) => (results[i] ? w.reject(results[i]!) : w.resolve())),
      (e: unknown) => batch.forEach((w) => w.reject(e instanceof Error ? e : new Error(String(e)))),
    );
    if (this.queue.length >= this.size) this.send();
  }

  async flush(): Promise<void> {
    this.send();
    await this.inner.flush();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
