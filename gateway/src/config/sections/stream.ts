import { type SettingTable, type SliceOf, type ValuesOf, derive, int, oneOf, positiveOrUnlimited, section, subjectTokens, trimmed } from "../section-kit.js";
import { parseBool, parseBytes, parseDuration, parseIntStrict } from "../parse.js";
import { regionLayout, type RegionsValues } from "./regions.js";

/** STREAM_NAME's default: the stream of the channels (the events feature's is EVENTS_STREAM, FANOUT_EVENTS). */
export const DEFAULT_STREAM_NAME = "FANOUT_CHANNELS";
/** STREAM_NAME's default before FANOUT_CHANNELS: a deployment that has it and sets no STREAM_NAME keeps it (broker/jetstream/stream-name.ts). */
export const FORMER_DEFAULT_STREAM_NAME = "EVENTS";

const settings = {
  streamName: {
    env: "STREAM_NAME",
    shown: DEFAULT_STREAM_NAME,
    doc: `JetStream stream holding all channels (namespace streams are <STREAM_NAME>_<NAME>). Not set, a NATS with no ${DEFAULT_STREAM_NAME} but a stream ${FORMER_DEFAULT_STREAM_NAME} on <SUBJECT_PREFIX>.> (the default before) keeps ${FORMER_DEFAULT_STREAM_NAME}`,
    default: () => DEFAULT_STREAM_NAME,
    parse: trimmed,
    check: (v: string) => (/^[A-Za-z0-9_-]+$/.test(v) ? undefined : "must be letters, digits, _ or -"),
  },
  subjectPrefix: {
    env: "SUBJECT_PREFIX",
    shown: "ev",
    doc: "Subject prefix: channel orders.eu is subject <prefix>.orders.eu",
    default: () => "ev",
    parse: trimmed,
    check: subjectTokens(),
  },
  liveSubjectPrefix: {
    env: "LIVE_SUBJECT_PREFIX",
    shown: "<prefix>live",
    doc: "Prefix the stream republishes every stored message under for live delivery (core NATS, no consumer); must not overlap the stream's subjects",
    default: () => "",
    parse: trimmed,
    check: subjectTokens(true),
  },
  streamStorage: {
    env: "STREAM_STORAGE",
    shown: "file",
    doc: "Stream storage: file or memory",
    default: () => "file" as "file" | "memory",
    parse: oneOf("file", "memory"),
  },
  streamReplicas: {
    env: "STREAM_REPLICAS",
    shown: "1",
    doc: "Stream replicas (1, 3 or 5 on a cluster); the presence bucket, and the events stream, its webhook lease and state bucket, have as many",
    default: () => 1,
    parse: parseIntStrict,
    check: int(1, 5),
  },
  streamMaxAge: {
    env: "STREAM_MAX_AGE",
    shown: "24h",
    doc: "Oldest message kept; 0 keeps forever",
    default: () => 86_400_000,
    parse: parseDuration,
  },
  streamMaxMsgsPerSubject: {
    env: "STREAM_MAX_MSGS_PER_SUBJECT",
    shown: "-1",
    doc: "Messages kept per channel; -1 unlimited",
    default: () => -1,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  streamMaxBytes: {
    env: "STREAM_MAX_BYTES",
    shown: "1GiB",
    doc: "Stream size limit; -1 unlimited",
    default: () => 1_073_741_824,
    parse: parseBytes,
    check: positiveOrUnlimited,
  },
  streamDuplicateWindow: {
    env: "STREAM_DUPLICATE_WINDOW",
    shown: "2m",
    doc: "Window in which a repeated msgId / Idempotency-Key is stored once",
    default: () => 120_000,
    parse: parseDuration,
    check: (v: number) => (v < 100 ? "must be at least 100ms" : undefined),
  },
  streamMaxConsumers: {
    env: "STREAM_MAX_CONSUMERS",
    shown: "10000",
    doc: "Consumers the stream allows (durable subscriptions are its only consumers; nats-server 2.15 defaults to 1000); -1 unlimited",
    default: () => 10_000,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  updateStream: {
    env: "UPDATE_STREAM",
    shown: "false",
    doc: "Update an existing stream whose config differs instead of exiting",
    default: () => false,
    parse: parseBool,
    boolean: true,
  },
  streamCheckIntervalMs: {
    env: "STREAM_CHECK_INTERVAL",
    shown: "10s",
    doc: "How often the primary checks that the stream and the presence bucket are set up as the gateway needs (republish rule, direct gets, subjects; not deleted), and the events stream, the webhook's lease stream and the state bucket (not deleted; the settings the gateway keeps); a drift makes /readyz 503",
    default: () => 10_000,
    parse: parseDuration,
    check: int(100, 3_600_000),
  },
  streamRepair: {
    env: "STREAM_REPAIR",
    shown: "repair",
    doc: "repair: put a drifted stream or bucket back (update it, or create it again); report: only log it, set fanout_stream_drift and answer /readyz 503",
    default: () => "repair" as const,
    parse: oneOf("repair", "report"),
  },
} satisfies SettingTable;

export type StreamValues = ValuesOf<typeof settings>;

export const stream = section({
  name: "stream",
  title: "The default JetStream stream: its subjects, limits, and the primary's watch over its setup",
  settings,
  slice: {
    name: "streamName",
    subjectPrefix: "subjectPrefix",
    livePrefix: derive(["liveSubjectPrefix"], (c: LiveInputs) => regionLivePrefix(livePrefixOf(c), c.region)),
    // Regions: the stream lives in the home region and republishes under the home region's live prefix.
    homeLivePrefix: derive([], (c: LiveInputs) => regionLivePrefix(livePrefixOf(c), regionLayout(c)?.home ?? "")),
    homeRegion: derive([], (c: RegionsValues) => regionLayout(c)?.home),
    storage: "streamStorage",
    replicas: "streamReplicas",
    maxAgeMs: "streamMaxAge",
    maxMsgsPerSubject: "streamMaxMsgsPerSubject",
    maxBytes: "streamMaxBytes",
    duplicateWindowMs: "streamDuplicateWindow",
    maxConsumers: "streamMaxConsumers",
    update: "updateStream",
    checkIntervalMs: "streamCheckIntervalMs",
    repair: derive(["streamRepair"], (c: Pick<StreamValues, "streamRepair">) => c.streamRepair === "repair"),
    // Per-message TTL (`Nats-TTL`, JetStream's allow_msg_ttl) is for namespace streams only.
    allowMsgTtl: derive([], () => false),
  },
});

export type StreamSection = SliceOf<typeof settings, typeof stream.slice>;

type LiveInputs = Pick<StreamValues, "liveSubjectPrefix" | "subjectPrefix"> & RegionsValues;

/**
 * A region's own live prefix: `<live prefix>.<region>` (the base alone without regions). Core NATS subjects
 * cross the gateways of a supercluster, so each region's mirror republishes under a prefix of its own, or a
 * region's feeds would get every message once per region.
 */
export function regionLivePrefix(base: string, region: string): string {
  return region === "" ? base : `${base}.${region}`;
}

/** The subject prefix of live (republished) messages: LIVE_SUBJECT_PREFIX, or `<SUBJECT_PREFIX>live`. */
export function livePrefixOf(c: Pick<StreamValues, "liveSubjectPrefix" | "subjectPrefix">): string {
  return c.liveSubjectPrefix || `${c.subjectPrefix}live`;
}
