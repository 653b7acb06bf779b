import type { EventSource, StoredEvent } from "../broker/events.js";
import type { BackendCaller } from "../backend/caller.js";
import { secretsOf } from "../backend/signature.js";
import type { WebhookSection } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import type { WebhookMetrics } from "./metrics.js";
import type { LeaderLease } from "../services/leader-lease.js";
import type { SenderTimings } from "./webhook-timings.js";

/** The header naming the instance that sent a webhook request (`<host>/<pid>`): each event is sent by one at a time. */
export const SENDER_HEADER = "fanout-sender";

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
export const webhookSecrets = (text: string, file: string): string[] => secretsOf(text, "EVENTS_WEBHOOK_SECRET_FILE", file);

/** A batch's body: `{"events":[…]}`, each event with its stream sequence as `id`, first. */
export function batchBody(events: readonly Pick<StoredEvent, "seq" | "json">[]): string {
  return `{"events":[${events.map((e) => `{"id":${e.seq},${e.json.slice(1)}`).join(",")}]}`;
}

/**
 * Held events and a pull's as one batch in stream order, each event once (its latest delivery). A pull is not in
 * stream order when the consumer gives events back during it: JetStream hands out new events first and then, in
 * the same pull, earlier ones whose ack wait ran out meanwhile (a previous holder's); and an event held here can
 * come again when its heartbeats were lost.
 */
export function inStreamOrder(held: readonly StoredEvent[], fetched: readonly StoredEvent[]): StoredEvent[] {
  const bySeq = new Map<number, StoredEvent>();
  for (const e of held) bySeq.set(e.seq, e);
  for (const e of fetched) bySeq.set(e.seq, e);
  return [...bySeq.values()].sort((x, y) => x.seq - y.seq);
}

/** What the live page and /v1/stats show of this instance's sender (its lag is the consumer's, the same everywhere). */
export type SenderState = {
  /** Whether this instance sends now: it holds the lease (ordered), or always (unordered). */
  sending: boolean;
  /** Batches this instance has out, not yet answered 2xx. */
  inFlight: number;
  /** Failed calls since start, and those in a row since the last 2xx. */
  failures: number;
  failingSince?: string;
  lastFailure?: string;
};

/**
 * Sends the events stream to EVENTS_WEBHOOK_URL: a batch at a time per slot (EVENTS_WEBHOOK_CONCURRENCY
 * slots; with one, only while this instance holds the lease, so one batch is out in the deployment), until
 * a 2xx answers it, then the next. A failed batch (another status, no answer within the deadline, no
 * connection) is sent again, unchanged but for what the stream no longer holds, after a jittered backoff.
 * Every tick the lease is renewed and each batch out is kept from redelivery (`working`), so a live sender
 * keeps its batch however long it retries and a dead one loses it within EVENTS_WEBHOOK_TAKEOVER. It gives
 * up on an event only when the stream has dropped it (its retention ran out).
 */
export class WebhookSender {
  private readonly stopping = new AbortController();
  private readonly inFlight = new Set<StoredEvent[]>();
  private readonly idle = new Set<() => void>();
  private running?: Promise<unknown>;
  private timer?: NodeJS.Timeout;
  private beating = false;
  private failures = 0;
  private failingSince?: number;
  private lastFailure?: string;
  /** Ordered: the last event this sender acknowledged in its current turn (a batch right after it is next in line). */
  private lastDone?: number;
  /** Ordered: events pulled while earlier ones were still out with a previous holder, kept until those come back. */
  private held: StoredEvent[] = [];
  private holdNoted = false;

  constructor(
    private readonly source: EventSource,
    private readonly caller: Pick<BackendCaller, "post" | "warn">,
    private readonly config: Pick<WebhookSection, "url" | "batch" | "backoffMaxMs" | "concurrency" | "waitMs">,
    private readonly timings: SenderTimings,
    private readonly log: Logger,
    private readonly metrics?: WebhookMetrics,
    /** Ordered: the deployment's one turn to send; absent when EVENTS_WEBHOOK_CONCURRENCY > 1. */
    private readonly lease?: LeaderLease,
  ) {}

  start(): void {
    if (this.running) return;
    this.timer = setInterval(() => void this.beat(), this.timings.tickMs);
    void this.beat();
    this.running = Promise.all(Array.from({ length: this.config.concurrency }, () => this.loop()));
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    clearInterval(this.timer);
    // A pull in progress ends by its expiry (EVENTS_WEBHOOK_WAIT, at least 1 s) and is waited for, so that what it
    // brings is handed back below instead of waiting out the ack wait; a call in progress is waited for as long.
    await Promise.race([this.running, new Promise((r) => setTimeout(r, Math.max(2_000, this.config.waitMs + 500)).unref())]);
    // Every batch still out is handed back now, before the lease: the next holder's first pull gets it before
    // anything stored later (left to the ack wait, later events would reach the webhook first). A call that
    // still succeeds after this makes its events arrive twice, each under its id.
    for (const e of this.unhold()) e.nak();
    for (const batch of this.inFlight) for (const e of batch) e.nak();
    await this.lease?.release();
  }

  state(): SenderState {
    return {
      sending: this.may(),
      inFlight: this.inFlight.size,
      failures: this.failures,
      ...(this.failingSince !== undefined ? { failingSince: new Date(this.failingSince).toISOString() } : {}),
      ...(this.lastFailure !== undefined ? { lastFailure: this.lastFailure } : {}),
    };
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /** Whether this instance may pull and send now. */
  private may(): boolean {
    return !this.stopped && (this.lease?.holds() ?? true);
  }

  /** Renews (or takes) the lease, then keeps every batch out from redelivery while this instance may send. */
  private async beat(): Promise<void> {
    if (this.beating) return;
    this.beating = true;
    try {
      await this.lease?.tick();
      if (!this.may()) return;
      for (const batch of this.inFlight) for (const e of batch) e.working();
      // A loop waiting for the turn starts at once.
      for (const wake of this.idle) wake();
    } finally {
      this.beating = false;
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      if (!this.may()) {
        this.endTurn();
        await this.pause(this.timings.tickMs, this.idle);
        continue;
      }
      try {
        const fetched = await this.source.fetch(this.config.batch, this.config.waitMs);
        const batch = inStreamOrder(this.unhold(), fetched);
        if (batch.length === 0) continue;
        if (this.lease && !(await this.inLine(batch))) {
          this.hold(batch);
          continue;
        }
        this.holdNoted = false;
        await this.deliver(batch);
      } catch (e) {
        this.caller.warn("webhook", { err: e }, "reading the events stream failed; trying again");
        await this.pause(1_000);
      }
    }
    this.endTurn();
  }

  /**
   * Ordered: whether `batch` (in stream order, each event once) may go now, that is, no earlier event is still out
   * with another holder. A batch that goes on from this turn's last one without a gap is; otherwise (the first
   * of a turn, or after a gap, or with one inside) the consumer is asked:
   * events out beyond this batch belong to a sender that stopped or died, and the consumer gives them back
   * (at once for a hand-back, after the ack wait otherwise; a hand-back can be forgotten when the consumer's
   * leader changes), so this batch waits for them rather than reach the webhook before them.
   */
  private async inLine(batch: readonly StoredEvent[]): Promise<boolean> {
    if (this.lastDone !== undefined && batch[0]?.seq === this.lastDone + 1 && batch.at(-1)?.seq === this.lastDone + batch.length) return true;
    const out = await this.source.outstanding().catch(() => Infinity);
    if (out <= batch.length) return true;
    if (!this.holdNoted) {
      this.holdNoted = true;
      this.log.info(
        { held: batch.length, firstId: batch[0]?.seq, outstanding: out - batch.length },
        "events webhook: earlier events are still out with a previous sender; waiting for them before sending later ones",
      );
    }
    return false;
  }

  /** Keeps pulled events out of the webhook (and from redelivery: each tick's heartbeat covers them) until their turn. */
  private hold(batch: StoredEvent[]): void {
    this.held = batch;
    this.inFlight.add(batch);
  }

  private unhold(): StoredEvent[] {
    const held = this.held;
    this.inFlight.delete(held);
    this.held = [];
    return held;
  }

  /** The turn is over (lease lost, or stopping): held events go back to the consumer, and the next turn starts afresh. */
  private endTurn(): void {
    for (const e of this.unhold()) e.nak();
    this.lastDone = undefined;
    this.holdNoted = false;
  }

  private async deliver(fetched: StoredEvent[]): Promise<void> {
    let batch = fetched;
    this.inFlight.add(batch);
    try {
      for (let attempt = 0; this.may(); attempt++) {
        const res = await this.caller.post("webhook", this.config.url, batchBody(batch));
        if (res.ok) {
          for (const e of batch) e.ack();
          this.failingSince = undefined;
          this.lastDone = batch.at(-1)?.seq;
          return;
        }
        const why = "failed" in res ? res.why : `answered HTTP ${res.status}`;
        this.failures++;
        this.failingSince ??= Date.now();
        this.lastFailure = why;
        this.caller.warn("webhook", { status: res.status, events: batch.length, firstId: batch[0]?.seq }, `events webhook ${why}; sending the batch again`);
        await this.pause(backoffMs(attempt, this.config.backoffMaxMs));
        const kept = await this.dropExpired(batch);
        if (kept.length === 0) {
          this.lastDone = batch.at(-1)?.seq;
          return;
        }
        if (kept !== batch) {
          this.inFlight.delete(batch);
          this.inFlight.add((batch = kept));
        }
      }
      // Stopping, or the lease lost: the batch is handed back now, to whichever sender pulls next.
      for (const e of batch) e.nak();
    } finally {
      this.inFlight.delete(batch);
    }
  }

  /** The batch without the events the stream no longer holds (acknowledged, counted and logged as lost). */
  private async dropExpired(batch: StoredEvent[]): Promise<StoredEvent[]> {
    const first = await this.source.firstSeq().catch(() => 0);
    const gone = batch.filter((e) => e.seq < first);
    if (gone.length === 0) return batch;
    this.log.error(
      { events: gone.length, firstId: gone[0]?.seq, lastId: gone.at(-1)?.seq },
      "events dropped by the stream's retention before the webhook took them",
    );
    for (const e of gone) e.ack();
    this.metrics?.dropped.inc(gone.length);
    return batch.filter((e) => e.seq >= first);
  }

  /** Resolves after `ms`, or at once when the sender stops (or something calls it from `wakers`). */
  private pause(ms: number, wakers?: Set<() => void>): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.stopping.signal.removeEventListener("abort", done);
        wakers?.delete(done);
        resolve();
      };
      wakers?.add(done);
      const t = setTimeout(done, ms);
      this.stopping.signal.addEventListener("abort", done, { once: true });
    });
  }
}
