import client from "prom-client";
import type { EventKind, EventsSection } from "../config/sections.js";
import type { Logger } from "../log.js";
import { WarnEvery } from "../util/warn-every.js";
import type { NamespacesSection } from "../namespaces/namespace.js";

/** What an event says besides its kind and time (PROTOCOL.md, "Events"). */
export type EventFields = {
  user: string;
  /** The connection: the same id presence shows for it. */
  client: string;
  /** The connection's kind: a WebSocket, or a Server-Sent Events stream (one subscription, its pattern). */
  transport: "websocket" | "sse";
  /** subscribe, unsubscribe: the pattern; presence.join, presence.leave: the channel. */
  channel?: string;
  /** disconnect: the close code and reason. */
  code?: number;
  reason?: string;
};

/** Stores an event's JSON under a subject; resolves with its stream sequence (the broker's `appendEvent`). */
export type AppendEvent = (subject: string, json: string) => Promise<number>;

/**
 * Records connection, subscription and presence events in the events stream, for the kinds EVENTS turns on.
 * Called once per connect, disconnect, subscribe, unsubscribe, presence join and leave, never per message; the store is not awaited (a
 * socket never waits on it), and one that fails is counted and logged at most every 5 s.
 */
export class EventRecorder {
  private readonly kinds: ReadonlySet<EventKind>;
  private readonly failed: client.Counter<"type">;
  private readonly warnings: WarnEvery;

  constructor(
    private readonly config: Pick<EventsSection, "kinds" | "subject">,
    private readonly append: AppendEvent,
    log: Logger,
    registry: client.Registry = client.register,
    /** Namespaces whose `events` narrow the kinds recorded for their channels. */
    private readonly namespaces?: NamespacesSection,
  ) {
    this.kinds = new Set(config.kinds);
    this.warnings = new WarnEvery(log, 5_000, "type");
    this.failed =
      (registry.getSingleMetric("fanout_events_failed_total") as client.Counter<"type"> | undefined) ??
      new client.Counter({
        name: "fanout_events_failed_total",
        help: "Events that could not be stored in the events stream (lost), by type",
        labelNames: ["type"] as const,
        registers: [registry],
      });
  }

  record(kind: EventKind, f: EventFields): void {
    if (!this.kinds.has(kind) || (f.channel !== undefined && !this.inNamespace(kind, f.channel))) return;
    const json = JSON.stringify({ type: kind, time: new Date().toISOString(), ...f });
    this.append(`${this.config.subject}.${kind}`, json).catch((e: unknown) => this.fail(kind, e));
  }

  /** Whether the namespace of `channel` (a pattern for subscribe and unsubscribe) records `kind`. */
  private inNamespace(kind: EventKind, channel: string): boolean {
    if (!this.namespaces || this.namespaces.empty) return true;
    const route = this.namespaces.ofPattern(channel);
    return route.kind !== "namespace" || (route.ns.events?.has(kind) ?? true);
  }

  private fail(kind: EventKind, e: unknown): void {
    this.failed.labels(kind).inc();
    this.warnings.warn(kind, { err: e }, "an event could not be stored in the events stream");
  }
}
