import type { Logger } from "../../log.js";

/** A worker warns of unacknowledged publishes at most this often. */
export const ACK_TIMEOUT_WARN_EVERY_MS = 10_000;

/** What JetStream says of the stream a timed-out publish went to (stream-state lookups are the broker's). */
export type StreamLook = Record<string, unknown>;

/**
 * Publishes the stream never acknowledged (JsPublisher's timeouts), told to the log at warn: at most one line
 * per ACK_TIMEOUT_WARN_EVERY_MS, naming the stream, the last subject, how many timed out since the last
 * line, and what JetStream says of the stream right then (found or not, its subjects and last sequence), so
 * that a gateway whose publishes all fail says where they went (no per-message logging: the line is
 * scheduled once per window however many time out).
 */
export class AckTimeoutWarning {
  private count = 0;
  private subject = "";
  private timer?: NodeJS.Timeout;
  private warnedAt = -Infinity;

  constructor(
    private readonly log: Logger,
    private readonly streamOf: (subject: string) => string,
    private readonly look: (stream: string) => Promise<StreamLook>,
    private readonly everyMs = ACK_TIMEOUT_WARN_EVERY_MS,
  ) {}

  timedOut(subject: string): void {
    this.count++;
    this.subject = subject;
    if (this.timer) return;
    this.timer = setTimeout(() => void this.warn(), Math.max(0, this.warnedAt + this.everyMs - Date.now()));
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
  }

  private async warn(): Promise<void> {
    const { count, subject } = this;
    const stream = this.streamOf(subject);
    this.count = 0;
    const state = await this.look(stream).catch((e: unknown) => ({ lookFailed: e instanceof Error ? e.message : String(e) }));
    this.warnedAt = Date.now();
    this.timer = undefined;
    this.log.warn(
      { stream, subject, timedOut: count, ...state },
      "publishes got no acknowledgement in time: the stream did not answer them (is it there, does it take the subject?)",
    );
  }
}
