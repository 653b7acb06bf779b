import type { EventKind } from "../config/sections/events.js";

/** The features a namespace can switch off; each is on unless its namespace says `false`. */
export const FEATURES = ["history", "resume", "presence", "publish", "sse", "durables", "lastValues"] as const;
export type Feature = (typeof FEATURES)[number];
export type Features = Readonly<Record<Feature, boolean>>;

/** What each feature covers, for errors and docs. */
export const FEATURE_DOORS: Readonly<Record<Feature, string>> = {
  history: "history reads and starts from a time, the last N messages or the beginning",
  resume: "resumes from a seq (and epoch)",
  presence: "presence",
  publish: "client publishes",
  sse: "Server-Sent Events",
  durables: "durable subscriptions",
  lastValues: "the last value of each channel",
};

/**
 * One namespace as NAMESPACES_FILE gives it, checked: stream settings it leaves out take the default
 * stream's (STREAM_*), its stream name is `<STREAM_NAME>_<NAME>` unless given.
 */
export type NamespaceSpec = Readonly<{
  name: string;
  /** Channel prefix of whole tokens (`chat`, `app1.inbox`); the name when not given. */
  prefix: string;
  stream?: string;
  storage?: "file" | "memory";
  replicas?: number;
  maxAgeMs?: number;
  maxMsgsPerSubject?: number;
  maxBytes?: number;
  duplicateWindowMs?: number;
  /** Per-message TTL (the `Nats-TTL` header, JetStream's allow_msg_ttl). */
  allowMsgTtl: boolean;
  features: Features;
  /** A resume or start older than now − this starts at the window's first message (reported truncated); 0: no window. */
  resumeWindowMs: number;
  /** The channel event kinds recorded for its channels (of those EVENTS records); undefined: all of them. */
  events?: readonly EventKind[];
  /** Coalesced frames' window in ms (0 off); undefined: COALESCE's. */
  coalesceMs?: number;
}>;

/** NAMESPACES_FILE as read: the file and its namespaces (none when unset). */
export type NamespacesFile = Readonly<{ file: string; namespaces: readonly NamespaceSpec[] }>;
