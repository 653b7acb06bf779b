import type { EventSource, StoredEvent } from "../broker/jetstream/events-stream.js";
import type { BackendCaller } from "../backend/caller.js";
import type { WebhookSection } from "../config/sections.js";
import type { Logger } from "../log.js";
import type { WebhookMetrics } from "./metrics.js";

/** The wait before try `attempt` (0-based) of a failed batch: doubling from 100 ms, capped, jittered to half–full. */
export function backoffMs(attempt: number, capMs: number, random: () => number = Math.random): number {
  const full = Math.min(capMs, 100 * 2 ** Math.min(attempt, 30));
  return Math.round(full * (0.5 + random() / 2));
}

/**
 * The secrets in EVENTS_WEBHOOK_SECRET_FILE's text: one per line, the current one first and, while it is
 * rotated, the previous one second (every request is signed with each). Blank lines are ignored; none, or
 * more than two, is refused.
 */
export function webhookSecrets(text: string, file: string): string[] {
  const secrets = text.split(/\r?\n/).filter((l) => l.trim() !== "");
  if (secrets.length === 0) throw new Error(`EVENTS_WEBHOOK_SECRET_FILE ${file} is empty`);
  if (secrets.length > 2)
    throw new Error(`EVENTS_WEBHOOK_SECRET_FILE ${file} holds ${secrets.length} secrets: at most two (the current one, then the previous one)`);
  return secrets;
}

/** A batch's body: `{"events":[…]}`, each event with its stream sequence as `id`, first. */
export function batchBody(events: readonly Pick<StoredEvent, "seq" | "json">[]): string {
  return `{"events":[${events.map((e) => `{"id":${e.seq},${e.json.slice(1)}`).join(",")}]}`;
}

/**
 * Sends the events stream to EVENTS_WEBHOOK_URL: one batch at a time, in stream order, until a 2xx answers
 * it, then the next. A failed batch (another status, no answer within the deadline, no connection) is sent
 * again, unchanged but for what the stream no longer holds, after a jittered backoff; its events are kept
 * from redelivery to another instance meanwhile (`working`). It gives up on an event only when the stream
 * has dropped it (its retention ran out).
 */
export class WebhookSender {
  private stopped = false;
  private wake?: () => void;
  private running?: Promise<void>;

  constructor(
    private readonly source: EventSource,
    private readonly caller: BackendCaller,
    private readonly config: Pick<WebhookSection, "url" | "batch" | "waitMs" | "backoffMaxMs">,
    private readonly log: Logger,
    private readonly metrics?: WebhookMetrics,
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    // A call or a pull in progress is not waited for past 2 s: its batch goes to another sender after the ack wait.
    await Promise.race([this.running, new Promise((r) => setTimeout(r, 2_000).unref())]);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        const batch = await this.source.fetch(this.config.batch, this.config.waitMs);
        if (batch.length > 0) await this.deliver(batch);
      } catch (e) {
        this.caller.warn("webhook", { err: e }, "reading the events stream failed; trying again");
        await this.pause(1_000);
      }
    }
  }

  private async deliver(fetched: StoredEvent[]): Promise<void> {
    let batch = fetched;
    for (let attempt = 0; !this.stopped; attempt++) {
      const res = await this.caller.post("webhook", this.config.url, batchBody(batch));
      if (res.ok) {
        for (const e of batch) e.ack();
        return;
      }
      const why = "failed" in res ? res.why : `answered HTTP ${res.status}`;
      this.caller.warn("webhook", { status: res.status, events: batch.length, firstId: batch[0]?.seq }, `events webhook ${why}; sending the batch again`);
      for (const e of batch) e.working();
      await this.pause(backoffMs(attempt, this.config.backoffMaxMs));
      for (const e of batch) e.working();
      const first = await this.source.firstSeq().catch(() => 0);
      const gone = batch.filter((e) => e.seq < first);
      if (gone.length > 0) {
        this.log.error(
          { events: gone.length, firstId: gone[0]?.seq, lastId: gone.at(-1)?.seq },
          "events dropped by the stream's retention before the webhook took them",
        );
        for (const e of gone) e.ack();
        this.metrics?.dropped.inc(gone.length);
        batch = batch.filter((e) => e.seq >= first);
        if (batch.length === 0) return;
      }
    }
    // Stopping with a batch not taken: handed back now, to another instance's sender (or this one's next start).
    for (const e of batch) e.nak();
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }
}
