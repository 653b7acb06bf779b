import type { EventKind } from "../config/sections/events.js";
import { CHANNEL_EVENT_KINDS } from "../config/sections/events.js";
import type { StreamSection } from "../config/sections/stream.js";
import type { Namespace, NamespacesSection } from "./namespace.js";
import type { Features } from "./spec.js";

/** A stream's retention and limits in effect (the gateway creates the stream with them, or refuses to start on another). */
export type StreamSettings = {
  stream: string;
  storage: "file" | "memory";
  replicas: number;
  /** 0: kept forever. */
  maxAgeMs: number;
  /** -1: unlimited. */
  maxBytes: number;
  /** -1: unlimited. */
  maxMsgsPerSubject: number;
  duplicateWindowMs: number;
  allowMsgTtl: boolean;
};

/** A namespace as it runs: its stream's settings, its feature switches, resume window, coalescing and the channel events it records. */
export type NamespaceSettings = StreamSettings & {
  name: string;
  prefix: string;
  features: Features;
  /** 0: no window. */
  resumeWindowMs: number;
  /** 0: off. */
  coalesceMs: number;
  /** The channel event kinds recorded for its channels (EVENTS, narrowed by its `events`). */
  events: EventKind[];
};

/** What the start log and `/v1/stats` show: the default stream and every namespace, with every default filled in. */
export type EffectiveSettings = { defaultStream: StreamSettings; namespaces: NamespaceSettings[] };

export function streamSettings(s: StreamSection): StreamSettings {
  return {
    stream: s.name,
    storage: s.storage,
    replicas: s.replicas,
    maxAgeMs: s.maxAgeMs,
    maxBytes: s.maxBytes,
    maxMsgsPerSubject: s.maxMsgsPerSubject,
    duplicateWindowMs: s.duplicateWindowMs,
    allowMsgTtl: s.allowMsgTtl,
  };
}

/** `eventKinds`: what EVENTS records; `coalesceMs`: COALESCE, for a namespace that sets no window of its own. */
export function namespaceSettings(ns: Namespace, eventKinds: readonly EventKind[], coalesceMs: number): NamespaceSettings {
  return {
    name: ns.name,
    prefix: ns.prefix,
    ...streamSettings(ns.stream),
    features: { ...ns.features },
    resumeWindowMs: ns.resumeWindowMs,
    coalesceMs: ns.coalesceMs ?? coalesceMs,
    events: CHANNEL_EVENT_KINDS.filter((k) => eventKinds.includes(k) && (ns.events?.has(k) ?? true)),
  };
}

export function effectiveSettings(
  stream: StreamSection,
  namespaces: NamespacesSection,
  eventKinds: readonly EventKind[],
  coalesceMs: number,
): EffectiveSettings {
  return { defaultStream: streamSettings(stream), namespaces: namespaces.list.map((ns) => namespaceSettings(ns, eventKinds, coalesceMs)) };
}
