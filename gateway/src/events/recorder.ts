import client from "prom-client";
import type { EventKind, EventsSection } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import { TokenBucket } from "../limits/token-bucket.js";
import { WarnEvery } from "../util/warn-every.js";
import type { NamespacesSection } from "../namespaces/namespace.js";
import { channelKey, memberKey } from "./shared-keys.js";
import type { ShareTally } from "./tally.js";

const CHANNEL_KINDS = ["channel.occupied", "channel.vacated"] as const;
const MEMBER_KINDS = ["presence.join", "presence.leave"] as const;

/** What an event says besides its kind and time (PROTOCOL.md, "Events"). */
export type EventFields = {
  user: string;
  /** The connection: the same id presence shows for it. */
  client: string;
  /** The connection's kind: a WebSocket, or a Server-Sent Events stream (one subscription, its pattern). */
  transport: "websocket" | "sse";
  /** subscribe, unsubscribe: the pattern; presence.join, presence.leave: the channel. */
  channel?: string;
  /** disconnect: who closed (the gateway, or the client or a lost connection), and the close code and reason of that side. */
  by?: "client" | "server";
  code?: number;
  reason?: string;
};

/** What a cluster-wide event says (the leader records it): the channel, and for presence.join/leave the user. */
export type SharedEventFields = { channel: string; user?: string };

/**
 * Stores an event's JSON under a subject; resolves with its stream sequence (the broker's `appendEvent`).
 * With `msgId`, a second store of the same id within the stream's duplicate window is dropped (Nats-Msg-Id).
 */
export type AppendEvent = (subject: string, json: string, msgId?: string) => Promise<number>;

/**
 * Records connection, subscription and presence events in the events stream, for the kinds EVENTS turns on.
 * Called once per connect, disconnect, subscribe, unsubscribe, presence join and leave, never per message; the store is not awaited (a
 * socket never waits on it), and one that fails is counted and logged at most every 5 s.
 *
 * The cluster-wide kinds are not recorded here: with a `tally`, subscribe and unsubscribe count the
 * worker's subscribers per channel (channel.occupied, channel.vacated), and an identified user's presence
 * member entering and leaving counts the user per channel (presence.join, presence.leave); the cluster's
 * leader records those (events/announcer.ts, with `recordOnce`).
 */
export class EventRecorder {
  private readonly kinds: ReadonlySet<EventKind>;
  private readonly channels?: ShareTally;
  private readonly members?: ShareTally;
  private readonly failed: client.Counter<"type">;
  private readonly dropped: client.Counter<"type">;
  private readonly warnings: WarnEvery;
  /** Per connection (`client`), what it may still record besides connect and disconnect; forgotten at its disconnect. */
  private readonly allowance = new Map<string, TokenBucket>();

  constructor(
    private readonly config: Pick<EventsSection, "kinds" | "subject"> & Partial<Pick<EventsSection, "perConnection">>,
    private readonly append: AppendEvent,
    log: Logger,
    registry: client.Registry = client.register,
    /** Namespaces whose `events` narrow the kinds recorded for their channels. */
    private readonly namespaces?: NamespacesSection,
    tally?: ShareTally,
  ) {
    this.kinds = new Set(config.kinds);
    if (this.kinds.has("channel.occupied") || this.kinds.has("channel.vacated")) this.channels = tally;
    if (this.kinds.has("presence.join") || this.kinds.has("presence.leave")) this.members = tally;
    this.warnings = new WarnEvery(log, 5_000, "type");
    this.failed =
      (registry.getSingleMetric("fanout_events_failed_total") as client.Counter<"type"> | undefined) ??
      new client.Counter({
        name: "fanout_events_failed_total",
        help: "Events that could not be stored in the events stream (lost), by type",
        labelNames: ["type"] as const,
        registers: [registry],
      });
    this.dropped =
      (registry.getSingleMetric("fanout_events_dropped_total") as client.Counter<"type"> | undefined) ??
      new client.Counter({
        name: "fanout_events_dropped_total",
        help: "Events not recorded because their connection recorded more than EVENTS_RATE_PER_CONNECTION (subscribe/unsubscribe churn), by type",
        labelNames: ["type"] as const,
        registers: [registry],
      });
  }

  record(kind: EventKind, f: EventFields): void {
    if (this.channels && f.channel !== undefined && (kind === "subscribe" || kind === "unsubscribe") && this.counts(CHANNEL_KINDS, f.channel)) {
      if (kind === "subscribe") this.channels.add(channelKey(f.channel));
      else this.channels.remove(channelKey(f.channel));
    }
    if (kind === "disconnect") this.allowance.delete(f.client);
    if (!this.kinds.has(kind) || (f.channel !== undefined && !this.inNamespace(kind, f.channel))) return;
    if (kind !== "connect" && kind !== "disconnect" && !this.allowed(f.client)) {
      this.dropped.labels(kind).inc();
      return;
    }
    const json = JSON.stringify({ type: kind, time: new Date().toISOString(), ...f });
    this.append(`${this.config.subject}.${kind}`, json).catch((e: unknown) => this.fail(kind, e));
  }

  /**
   * Whether connection `client` may record one more event (EVENTS_RATE_PER_CONNECTION): a socket that
   * subscribes and unsubscribes in a loop would otherwise fill the stream and the webhook's queue.
   */
  private allowed(client: string): boolean {
    const limit = this.config.perConnection;
    if (limit === undefined || limit.rate === -1) return true;
    const now = Date.now();
    let bucket = this.allowance.get(client);
    if (!bucket) this.allowance.set(client, (bucket = new TokenBucket(limit.rate, limit.burst, now)));
    return bucket.take(now);
  }

  /** Whether the namespace of `channel` (a pattern for subscribe and unsubscribe) records `kind`. */
  private inNamespace(kind: EventKind, channel: string): boolean {
    if (!this.namespaces || this.namespaces.empty) return true;
    const route = this.namespaces.ofPattern(channel);
    return route.kind !== "namespace" || (route.ns.events?.has(kind) ?? true);
  }

  /** Whether `channel`'s namespace records either of `kinds` (the cluster-wide pair it is counted for). */
  private counts(kinds: readonly [EventKind, EventKind], channel: string): boolean {
    return this.inNamespace(kinds[0], channel) || this.inNamespace(kinds[1], channel);
  }

  /**
   * A presence member entered (or left) `f.channel`. An identified user's join and leave are the cluster's:
   * counted here, recorded once per user by the leader (debounced); an unidentified member's are recorded now.
   */
  presence(entered: boolean, f: EventFields & { channel: string }, identified: boolean): void {
    if (!identified || !this.members) return this.record(entered ? "presence.join" : "presence.leave", f);
    if (!this.counts(MEMBER_KINDS, f.channel)) return;
    const key = memberKey(f.user, f.channel);
    if (entered) this.members.add(key);
    else this.members.remove(key);
  }

  /**
   * Stores a cluster-wide event, if its kind is on, and resolves once it is stored (or the stream dropped it
   * as a repeat of `msgId`); rejects when it could not be (the leader tries again with the same id).
   */
  async recordOnce(kind: EventKind, f: SharedEventFields, msgId: string): Promise<void> {
    if (!this.kinds.has(kind) || !this.inNamespace(kind, f.channel)) return;
    const json = JSON.stringify({ type: kind, time: new Date().toISOString(), ...f });
    await this.append(`${this.config.subject}.${kind}`, json, msgId);
  }

  private fail(kind: EventKind, e: unknown): void {
    this.failed.labels(kind).inc();
    this.warnings.warn(kind, { err: e }, "an event could not be stored in the events stream");
  }
}
