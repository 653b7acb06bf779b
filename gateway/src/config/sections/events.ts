import {
  type SettingTable,
  type SliceOf,
  type ValuesOf,
  checkHttpUrl,
  derive,
  int,
  positiveOrUnlimited,
  section,
  subjectTokens,
  trimmed,
} from "../section-kit.js";
import { parseBytes, parseDuration, parseIntStrict, parseList } from "../parse.js";
import type { StreamValues } from "./stream.js";
import { regionLayout, type RegionsValues } from "./regions.js";

/** Every kind of event the gateway records. */
export const EVENT_KINDS = [
  "connect",
  "disconnect",
  "subscribe",
  "unsubscribe",
  "presence.join",
  "presence.leave",
  "channel.occupied",
  "channel.vacated",
] as const;
export type EventKind = (typeof EVENT_KINDS)[number];

/** The kinds about a channel: those a namespace can turn off for its channels (`events` in NAMESPACES_FILE). */
export const CHANNEL_EVENT_KINDS: readonly EventKind[] = EVENT_KINDS.filter((k) => k !== "connect" && k !== "disconnect");

const settings = {
  eventsKinds: {
    env: "EVENTS",
    shown: "(none; all with EVENTS_WEBHOOK_URL)",
    doc: `Kinds of events recorded in the events stream: a list of ${EVENT_KINDS.join(", ")}, or all; unset records none, or every kind when EVENTS_WEBHOOK_URL is set`,
    default: () => [] as string[],
    parse: (s: string) => parseList(s).map((k) => k.toLowerCase()),
    check: (v: string[]) => {
      const bad = v.find((k) => k !== "all" && !(EVENT_KINDS as readonly string[]).includes(k));
      return bad === undefined ? undefined : `${bad} is not a kind of event (${EVENT_KINDS.join(", ")}, all)`;
    },
  },
  eventsStream: {
    env: "EVENTS_STREAM",
    shown: "FANOUT_EVENTS",
    doc: "JetStream stream the events are stored in (its own, beside the channels' stream; with STREAM_REPLICAS, as are the webhook's lease <name>_SENDER and the state bucket <name>_STATE)",
    default: () => "FANOUT_EVENTS",
    parse: trimmed,
    check: (v: string) => (/^[A-Za-z0-9_-]+$/.test(v) ? undefined : "must be letters, digits, _ or -"),
  },
  eventsSubject: {
    env: "EVENTS_SUBJECT",
    shown: "fanout.events",
    doc: "Subject prefix of stored events: an event of kind k is stored under <prefix>.k; must not overlap the channels' subjects",
    default: () => "fanout.events",
    parse: trimmed,
    check: subjectTokens(),
  },
  eventsMaxAge: {
    env: "EVENTS_MAX_AGE",
    shown: "24h",
    doc: "Oldest event the events stream keeps (and so how long a webhook outage can last without losing one); 0 keeps forever",
    default: () => 86_400_000,
    parse: parseDuration,
  },
  eventsMaxBytes: {
    env: "EVENTS_MAX_BYTES",
    shown: "1GiB",
    doc: "Most bytes the events stream keeps: past it the oldest events are dropped (as past EVENTS_MAX_AGE; fanout_webhook_dropped_total counts those the webhook had not sent). Applied to an existing stream at start; -1 no bound",
    default: () => 1_073_741_824,
    parse: parseBytes,
    check: (v: number) => (v === -1 || (Number.isSafeInteger(v) && v >= 1_048_576) ? undefined : "must be at least 1MiB, or -1"),
  },
  eventsRatePerConnection: {
    env: "EVENTS_RATE_PER_CONNECTION",
    shown: "10",
    doc: "Events per second one connection may record (token bucket) besides its connect and disconnect: its subscribe, unsubscribe and anonymous presence.join/leave; past it they are not recorded (fanout_events_dropped_total); -1 unlimited",
    default: () => 10,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  eventsBurstPerConnection: {
    env: "EVENTS_BURST_PER_CONNECTION",
    shown: "100",
    doc: "Bucket size of EVENTS_RATE_PER_CONNECTION: events a connection may record at once (a page subscribing to its channels)",
    default: () => 100,
    parse: parseIntStrict,
    check: int(1, 1_000_000),
  },
  eventsDebounceMs: {
    env: "EVENTS_DEBOUNCE",
    shown: "3s",
    doc: "channel.vacated waits this long after a channel's last subscriber left, and an identified user's presence.leave after their last member connection left: one that comes back meanwhile records neither that nor a new channel.occupied or presence.join",
    default: () => 3_000,
    parse: parseDuration,
    check: int(0, 3_600_000),
  },
  eventsInstanceTtlMs: {
    env: "EVENTS_INSTANCE_TTL",
    shown: "15s",
    doc: "An instance that stopped refreshing its heartbeat (a crash) for this long has its channels and presence users counted as gone (channel.vacated, presence.leave follow); the once-per-deployment leader's lease is as long. Refreshed every third of it",
    default: () => 15_000,
    parse: parseDuration,
    check: int(1_000, 3_600_000),
  },
  eventsWebhookUrl: {
    env: "EVENTS_WEBHOOK_URL",
    shown: "(unset)",
    doc: 'POSTs the recorded events here in batches (`{"events":[…]}`), once per deployment, in stream order, until a 2xx answers each batch',
    default: () => "",
    parse: trimmed,
    check: (v: string) => checkHttpUrl(v),
  },
  eventsWebhookSecretFile: {
    env: "EVENTS_WEBHOOK_SECRET_FILE",
    shown: "(unset)",
    doc: "File holding the secret webhook requests are signed with (`Fanout-Signature`, PROTOCOL.md), one a line: a second line (the previous secret, while rotating) adds a second signature; unset: unsigned",
    default: () => "",
    parse: trimmed,
  },
  eventsWebhookBatch: {
    env: "EVENTS_WEBHOOK_BATCH",
    shown: "100",
    doc: "Most events in one webhook request",
    default: () => 100,
    parse: parseIntStrict,
    check: int(1, 10_000),
  },
  eventsWebhookWaitMs: {
    env: "EVENTS_WEBHOOK_WAIT",
    shown: "1s",
    doc: "Longest a batch waits for more events before it is sent (at least 1s, JetStream's shortest pull)",
    default: () => 1_000,
    parse: parseDuration,
    check: int(1_000, 60_000),
  },
  eventsWebhookTimeoutMs: {
    env: "EVENTS_WEBHOOK_TIMEOUT",
    shown: "10s",
    doc: "A webhook request not answered by then is a failure (and is sent again)",
    default: () => 10_000,
    parse: parseDuration,
    check: int(10, 300_000),
  },
  eventsWebhookBackoffMaxMs: {
    env: "EVENTS_WEBHOOK_BACKOFF_MAX",
    shown: "30s",
    doc: "Longest wait between two tries of a failed batch (jittered exponential backoff from 100 ms)",
    default: () => 30_000,
    parse: parseDuration,
    check: int(100, 3_600_000),
  },
  eventsWebhookConcurrency: {
    env: "EVENTS_WEBHOOK_CONCURRENCY",
    shown: "1",
    doc: "Webhook batches in flight at once in the whole deployment: 1 keeps them in stream order (one instance sends at a time); more send faster but a later batch may arrive before an earlier one that is retried",
    default: () => 1,
    parse: parseIntStrict,
    check: int(1, 64),
  },
  eventsWebhookTakeoverMs: {
    env: "EVENTS_WEBHOOK_TAKEOVER",
    shown: "5s",
    doc: "How soon another instance takes over the webhook (and the batch in flight) from a sender that died; a live sender keeps its batch however long it retries. At least twice EVENTS_WEBHOOK_WAIT",
    default: () => 5_000,
    parse: parseDuration,
    check: int(2_000, 600_000),
  },
} satisfies SettingTable;

export type EventsValues = ValuesOf<typeof settings>;

export type WebhookSection = EventsSection["webhook"];

/** The kinds recorded: those named, all of them for `all`, and all of them when only the webhook is set. */
function kindsOf(c: Pick<EventsValues, "eventsKinds" | "eventsWebhookUrl">): readonly EventKind[] {
  if (c.eventsKinds.includes("all") || (c.eventsKinds.length === 0 && c.eventsWebhookUrl !== "")) return EVENT_KINDS;
  return EVENT_KINDS.filter((k) => c.eventsKinds.includes(k));
}

export const events = section({
  name: "events",
  title:
    "Events (events/): connections, subscriptions and presence members recorded in a stream of their own, and sent to a webhook; the events' stream, lease and state bucket follow the stream's replicas",
  settings,
  slice: {
    kinds: derive(["eventsKinds", "eventsWebhookUrl"], kindsOf),
    stream: "eventsStream",
    subject: "eventsSubject",
    maxAgeMs: "eventsMaxAge",
    maxBytes: "eventsMaxBytes",
    /** What one connection may record besides connect and disconnect (rate -1: unlimited). */
    perConnection: derive(
      ["eventsRatePerConnection", "eventsBurstPerConnection"],
      (c: Pick<EventsValues, "eventsRatePerConnection" | "eventsBurstPerConnection">) =>
        Object.freeze({ rate: c.eventsRatePerConnection, burst: c.eventsBurstPerConnection }),
    ),
    debounceMs: "eventsDebounceMs",
    instanceTtlMs: "eventsInstanceTtlMs",
    /** Replicas of the events stream, the webhook's lease stream and the state bucket: STREAM_REPLICAS, so that losing one NATS node stalls none of them. */
    replicas: derive([], (c: Pick<StreamValues, "streamReplicas">) => c.streamReplicas),
    /** Regions: the events stream, the lease's and the state bucket are made in the home region (docs/operations.md "Regions"). */
    homeRegion: derive([], (c: RegionsValues) => regionLayout(c)?.home),
    /** The KV bucket of the cluster-wide state (each instance's channels and users, the leader's lease): `<stream>_STATE`. */
    stateBucket: derive(["eventsStream"], (c: Pick<EventsValues, "eventsStream">) => `${c.eventsStream}_STATE`),
    webhook: derive(
      [
        "eventsWebhookUrl",
        "eventsWebhookSecretFile",
        "eventsWebhookBatch",
        "eventsWebhookWaitMs",
        "eventsWebhookTimeoutMs",
        "eventsWebhookBackoffMaxMs",
        "eventsWebhookConcurrency",
        "eventsWebhookTakeoverMs",
      ],
      (c: EventsValues) =>
        Object.freeze({
          url: c.eventsWebhookUrl,
          secretFile: c.eventsWebhookSecretFile,
          batch: c.eventsWebhookBatch,
          waitMs: c.eventsWebhookWaitMs,
          timeoutMs: c.eventsWebhookTimeoutMs,
          backoffMaxMs: c.eventsWebhookBackoffMaxMs,
          concurrency: c.eventsWebhookConcurrency,
          takeoverMs: c.eventsWebhookTakeoverMs,
        }),
    ),
  },
});

export type EventsSection = SliceOf<typeof settings, typeof events.slice>;
