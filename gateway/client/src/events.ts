import type { GatewayError } from "./errors.js";
import { microtask } from "./platform.js";

/** Lifecycle events of a `GatewayClient`, one discriminated union (listen with `client.on(type, fn)`). */
export type GatewayEvent =
  /** A connection attempt starts (`attempt` 0 is the first since the last success). */
  | { type: "connecting"; attempt: number }
  /** The socket is open; resubscribes are on their way. */
  | { type: "connected" }
  /** The socket closed; `reconnectInMs` is the backoff delay when `willReconnect`. */
  | { type: "disconnected"; code: number; reason: string; willReconnect: boolean; reconnectInMs?: number }
  /** Every subscription got its `ok` again after a (re)connect; the backoff starts over. */
  | { type: "resubscribed"; subscriptions: number }
  /** The server subscribed this connection to `channel` (a server-side subscription); its messages go to `onAutoMessage`. */
  | { type: "autoSubscribed"; channel: string; seq: number }
  /** Messages the subscription asked for are gone: retention removed them, or (`epochChanged`) the stream was recreated. */
  | { type: "gap"; channel: string; expectedSeq: number; firstSeq: number; epochChanged?: boolean }
  /** The server closed with 4001 (token expired). */
  | { type: "tokenExpired" }
  /** Something failed: a server `err`, a refused subscribe, a handler that threw, a `getToken` that failed. */
  | { type: "error"; error: GatewayError; channel?: string };
export type GatewayEventType = GatewayEvent["type"];

/** Every event type, in the order of the union (for docs and tests). */
export const EVENT_TYPES = [
  "connecting",
  "connected",
  "disconnected",
  "resubscribed",
  "autoSubscribed",
  "gap",
  "tokenExpired",
  "error",
] as const satisfies readonly GatewayEventType[];
// Fails to compile when the union gains a type that EVENT_TYPES lacks.
const _everyEventListed: Exclude<GatewayEventType, (typeof EVENT_TYPES)[number]> extends never ? true : never = true;

/** The listeners of a client's events: typed `on`, and an `emit` that a listener's bug cannot break. */
export class Emitter {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each event type has its own listener type
  private readonly listeners = new Map<GatewayEventType, Set<(e: any) => void>>();

  on<K extends GatewayEventType>(type: K, fn: (e: Extract<GatewayEvent, { type: K }>) => void): () => void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(fn);
    return () => set.delete(fn);
  }

  emit(e: GatewayEvent): void {
    for (const fn of this.listeners.get(e.type) ?? []) {
      try {
        fn(e);
      } catch (err) {
        microtask(() => {
          throw err; // a listener's bug should surface, not break the client's state machine
        });
      }
    }
  }
}
