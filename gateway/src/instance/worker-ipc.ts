import type { Metrics } from "../metrics/metrics.js";
import { isFgwMessage, type ToPrimary, type ToWorker } from "./ipc.js";

export function send(m: ToPrimary): void {
  process.send?.(m);
}

/** What the primary tells a worker about its instance; /readyz answers 503 until every worker listens, and while anything drifted. */
export class InstanceState {
  /** Whether every worker of the instance listens. */
  allReady = false;
  /** What of the stream's setup has drifted (the primary's StreamWatch says). */
  drift: readonly string[] = [];

  constructor(private readonly metrics: Metrics) {}

  setDrift(drift: readonly string[]): void {
    this.drift = drift;
    this.metrics.streamDrift.reset();
    for (const what of drift) this.metrics.streamDrift.labels(what).set(1);
  }
}

/**
 * The worker listens to its primary (once it listens itself: a shutdown asked before is not heard): a
 * shutdown, every worker ready, the stream's drift; a primary gone (killed) shuts it down too, not to linger
 * as an orphan. Signals go to the whole process group and the primary coordinates the drain: they are ignored.
 */
export function listenToPrimary(instance: InstanceState, shutdown: (why: string) => void): void {
  process.on("message", (m: unknown) => {
    if (isFgwMessage(m) && (m as ToWorker).type === "fgw:shutdown") shutdown("primary asked");
    if (isFgwMessage(m) && (m as ToWorker).type === "fgw:all-ready") instance.allReady = true;
    if (isFgwMessage(m) && (m as ToWorker).type === "fgw:drift") instance.setDrift((m as ToWorker & { type: "fgw:drift" }).drift);
  });
  process.on("disconnect", () => shutdown("primary disconnected"));
  process.on("SIGTERM", () => undefined);
  process.on("SIGINT", () => undefined);
}

/**
 * Asks the primary for the metrics of all workers, aggregated, or for the `/v1/stats` body (one IPC
 * exchange; concurrent requests share a scrape). Made by runWorker: nothing is registered at import time.
 */
export function metricsClient(): (what: "prometheus" | "stats") => Promise<{ text: string; contentType: string }> {
  let next = 0;
  const pending = new Map<number, (m: ToWorker & { type: "fgw:metrics-res" }) => void>();
  process.on("message", (m: unknown) => {
    if (!isFgwMessage(m) || (m as ToWorker).type !== "fgw:metrics-res") return;
    const r = m as ToWorker & { type: "fgw:metrics-res" };
    pending.get(r.id)?.(r);
    pending.delete(r.id);
  });
  return (what) => {
    const id = ++next;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        pending.delete(id);
        reject(new Error("primary did not answer in 6 s"));
      }, 6_000);
      pending.set(id, (r) => {
        clearTimeout(t);
        if (r.error || r.text === undefined) reject(new Error(r.error ?? "no metrics"));
        else resolve({ text: r.text, contentType: r.contentType ?? "text/plain" });
      });
      send({ type: "fgw:metrics-req", id, what });
    });
  };
}
