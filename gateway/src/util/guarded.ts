import type { Counter } from "prom-client";
import type { Logger } from "../log.js";
import { WarnEvery } from "./warn-every.js";

/**
 * Throws of callbacks that a library calls from its own read loop: a nats.js subscription callback runs inside
 * the connection's reader, and one throw there ends the reader for good (the connection stays open but reads
 * nothing more until its pings time out). Every such callback the gateway hands to NATS goes through
 * `guarded`: a throw is counted (`fanout_callback_failures_total` by kind) and logged, the first of a kind at
 * once and then at most once a minute with how many were not logged, and the reader goes on.
 */
export class CallbackFaults {
  private warnings?: WarnEvery;
  private counter?: Counter<"kind">;

  /** Where faults are counted and logged (the process's logger and metric, once both exist). */
  attach(log: Logger, counter?: Counter<"kind">): void {
    this.warnings = new WarnEvery(log, 60_000, "kind", "error");
    this.counter = counter;
  }

  /** `fn`, made safe to call from a library's loop: it never throws. */
  guard<A extends unknown[]>(kind: string, fn: (...args: A) => unknown): (...args: A) => void {
    return (...args: A) => {
      try {
        fn(...args);
      } catch (e) {
        this.fault(kind, e);
      }
    };
  }

  /** Counts and logs one throw of a `kind` of callback. */
  fault(kind: string, e: unknown): void {
    this.counter?.labels(kind).inc();
    this.warnings?.warn(kind, { err: e }, "a broker callback failed; the connection goes on reading");
  }
}

/** The process's one registry of callback faults (the worker and the primary attach their logger and metric). */
export const callbackFaults = new CallbackFaults();

/** `callbackFaults.guard`: wraps a callback handed to NATS (subscriptions, consumers, watches). */
export const guarded = <A extends unknown[]>(kind: string, fn: (...args: A) => unknown): ((...args: A) => void) => callbackFaults.guard(kind, fn);
