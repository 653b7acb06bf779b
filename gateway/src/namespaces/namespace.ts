import type { StreamSection } from "../config/sections/stream.js";
import { NamespaceRoutes } from "./routing.js";
import type { EventKind } from "../config/sections/events.js";
import type { Features, NamespaceSpec } from "./spec.js";

/**
 * A namespace as the gateway runs it: its channel prefix, its own stream (subjects
 * `<SUBJECT_PREFIX>_ns.<prefix>.>`, republished to the same live subjects as the default stream's
 * channels, `<live prefix>.<prefix>.>`), its features and resume window.
 */
export type Namespace = Readonly<{
  name: string;
  prefix: string;
  tokens: readonly string[];
  /** The stream's settings: `subjectPrefix`, `livePrefix` and `homeLivePrefix` are the namespace's own (prefix included). */
  stream: StreamSection;
  /** Prefix that maps a channel of the namespace to its stream subject: `<SUBJECT_PREFIX>_ns` (channel `chat.x` → `ev_ns.chat.x`). */
  channelSubjectPrefix: string;
  features: Features;
  resumeWindowMs: number;
  /** The channel event kinds recorded for its channels; undefined: every kind EVENTS records. */
  events?: ReadonlySet<EventKind>;
  /** Coalesced frames' window in ms (0 off); undefined: the COALESCE setting's. */
  coalesceMs?: number;
}>;

/** The namespaces and the routing between them (the default stream's channels are in none). */
export type NamespacesSection = NamespaceRoutes<Namespace>;

/** Subject prefix of the namespace streams: `<SUBJECT_PREFIX>_ns`. */
export const namespaceSubjectPrefix = (subjectPrefix: string): string => `${subjectPrefix}_ns`;

/** The stream name of a namespace that names none: `<STREAM_NAME>_<NAME>` upper-cased. */
export const namespaceStreamName = (defaultStream: string, name: string): string => `${defaultStream}_${name.toUpperCase()}`;

/** Namespaces with their streams' settings complete: what a spec leaves out, the default stream's settings give. */
export function resolveNamespaces(specs: readonly NamespaceSpec[], base: StreamSection): Namespace[] {
  const channelSubjectPrefix = namespaceSubjectPrefix(base.subjectPrefix);
  return specs.map((s) =>
    Object.freeze({
      name: s.name,
      prefix: s.prefix,
      tokens: Object.freeze(s.prefix.split(".")),
      channelSubjectPrefix,
      features: Object.freeze({ ...s.features }),
      resumeWindowMs: s.resumeWindowMs,
      ...(s.events !== undefined ? { events: new Set(s.events) } : {}),
      ...(s.coalesceMs !== undefined ? { coalesceMs: s.coalesceMs } : {}),
      stream: Object.freeze({
        ...base,
        name: s.stream ?? namespaceStreamName(base.name, s.name),
        subjectPrefix: `${channelSubjectPrefix}.${s.prefix}`,
        livePrefix: `${base.livePrefix}.${s.prefix}`,
        homeLivePrefix: `${base.homeLivePrefix}.${s.prefix}`,
        storage: s.storage ?? base.storage,
        replicas: s.replicas ?? base.replicas,
        maxAgeMs: s.maxAgeMs ?? base.maxAgeMs,
        maxMsgsPerSubject: s.maxMsgsPerSubject ?? base.maxMsgsPerSubject,
        maxBytes: s.maxBytes ?? base.maxBytes,
        duplicateWindowMs: s.duplicateWindowMs ?? base.duplicateWindowMs,
        allowMsgTtl: s.allowMsgTtl,
      }),
    }),
  );
}

export function namespacesSection(specs: readonly NamespaceSpec[], base: StreamSection): NamespacesSection {
  const routes = new NamespaceRoutes(Object.freeze(resolveNamespaces(specs, base)));
  Object.freeze(routes);
  return routes;
}
