import type { Logger } from "../log.js";
import { WarnEvery } from "../util/warn-every.js";
import { backendMetrics, type BackendMetrics } from "./metrics.js";
import { SIGNATURE_HEADER, signatureHeader } from "./signature.js";

/** How a caller calls: its deadline, how many calls it has open at most, the secrets it signs with. */
export type CallerOptions = Readonly<{
  /** A call not answered by then (including its wait for a free slot) fails with `timeout`. */
  timeoutMs: number;
  /** Calls open at once; more wait for a slot within their deadline. */
  maxInFlight: number;
  /** Each request is signed (`Fanout-Signature`) with each of these; none: unsigned. */
  secrets?: readonly (string | Buffer)[];
  /** Sent with every request besides the content type and signature (the webhook's `Fanout-Sender`). */
  headers?: Readonly<Record<string, string>>;
  /**
   * The most bytes of an answer's body read: a longer body fails the call with `too_large` as soon as it
   * passes this, the rest unread and the connection closed (none of it read when its Content-Length says so).
   * 0: only the status is wanted: the body is dropped unread and `text` is "".
   */
  maxAnswerBytes: number;
}>;

/**
 * The backend answered (any status), or did not: no answer within the deadline, no connection, or an answer
 * longer than `maxAnswerBytes` (`too_large`, with the status it came with; 0 for the others).
 */
export type CallResult =
  { status: number; ok: boolean; text: string } | { status: number; ok: false; failed: "timeout" | "unreachable" | "too_large"; why: string; cause: unknown };

/**
 * The one way the gateway calls the application's backend (Centrifugo's proxy package is the model): POST
 * JSON with a deadline, never following a redirect (it would re-send the user's headers wherever it points),
 * at most `maxInFlight` calls open, answers read up to `maxAnswerBytes` and no further, optionally signed,
 * counted per hook in `fanout_backend_calls_total` and `fanout_backend_call_seconds`. Hooks, webhooks and
 * what comes later are each a thin use of it.
 */
export class BackendCaller {
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly warnings: WarnEvery;

  constructor(
    private readonly options: CallerOptions,
    log: Logger,
    private readonly metrics: BackendMetrics = backendMetrics(),
  ) {
    this.warnings = new WarnEvery(log, 5_000, "hook");
  }

  /**
   * POSTs `body` (JSON text, sent as is: a signature covers these bytes) to `url` for `hook`, with `extra`
   * headers besides the caller's (never over the content type or the signature); never rejects.
   */
  async post(hook: string, url: string, body: string, extra?: Readonly<Record<string, string>>): Promise<CallResult> {
    const started = performance.now();
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    const result = await this.withSlot(signal, () => this.send(url, body, signal, extra)).catch((e: unknown) => failure(e, this.options.timeoutMs));
    this.metrics.calls.labels(hook, "failed" in result ? result.failed : result.ok ? "ok" : "status").inc();
    this.metrics.seconds.labels(hook).observe((performance.now() - started) / 1000);
    return result;
  }

  /**
   * Logs a warning about `hook`: the first at once, then at most one every 5 s with how many were not
   * logged (a backend that is down fails every call).
   */
  warn(hook: string, fields: Record<string, unknown>, msg: string): void {
    this.warnings.warn(hook, fields, msg);
  }

  private async send(url: string, body: string, signal: AbortSignal, extra?: Readonly<Record<string, string>>): Promise<CallResult> {
    const headers: Record<string, string> = { ...extra, ...this.options.headers, "content-type": "application/json" };
    if (this.options.secrets?.length) headers[SIGNATURE_HEADER] = signatureHeader(this.options.secrets, Math.floor(Date.now() / 1000), body);
    const res = await fetch(url, { method: "POST", headers, body, redirect: "error", signal });
    const max = this.options.maxAnswerBytes;
    const text = await readCapped(res, max);
    if (text === undefined) return { status: res.status, ok: false, failed: "too_large", why: `answered more than ${max} bytes`, cause: undefined };
    return { status: res.status, ok: res.ok, text };
  }

  private async withSlot<T>(signal: AbortSignal, f: () => Promise<T>): Promise<T> {
    if (this.inFlight >= this.options.maxInFlight) await this.slot(signal);
    this.inFlight++;
    try {
      return await f();
    } finally {
      this.inFlight--;
      this.waiting.shift()?.();
    }
  }

  /** Resolves when a call ends and hands its slot on; rejects with the signal's reason at the deadline. */
  private slot(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const take = () => {
        signal.removeEventListener("abort", abort);
        resolve();
      };
      const abort = () => {
        const i = this.waiting.indexOf(take);
        if (i >= 0) this.waiting.splice(i, 1);
        reject(signal.reason as Error);
      };
      signal.addEventListener("abort", abort, { once: true });
      this.waiting.push(take);
    });
  }
}

/**
 * The body of `res` as text, or undefined as soon as it is longer than `max` bytes: then the rest is not read
 * (cancelling the body closes the connection), and at most `max` bytes were ever held. `max` 0: "", unread.
 */
async function readCapped(res: Response, max: number): Promise<string | undefined> {
  const body = res.body;
  if (!body) return "";
  if (max === 0 || Number(res.headers.get("content-length") ?? 0) > max) {
    await body.cancel();
    return max === 0 ? "" : undefined;
  }
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return new TextDecoder().decode(Buffer.concat(chunks, total));
    total += value.byteLength;
    if (total > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
}

function failure(e: unknown, timeoutMs: number): CallResult {
  const timedOut = (e as Error)?.name === "TimeoutError";
  return timedOut
    ? { status: 0, ok: false, failed: "timeout", why: `did not answer within ${timeoutMs} ms`, cause: e }
    : { status: 0, ok: false, failed: "unreachable", why: `is unreachable (${causeOf(e)})`, cause: e };
}

const causeOf = (e: unknown): string => {
  const c = (e as { cause?: { code?: string; message?: string } })?.cause;
  return c?.code ?? c?.message ?? (e as Error)?.message ?? String(e);
};
