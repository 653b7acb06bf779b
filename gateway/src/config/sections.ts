import { type SliceOf, type Uncovered, type ValuesOf } from "./setting.js";
import { server } from "./sections/server.js";
import { broker } from "./sections/broker.js";
import { natsSecurity } from "./sections/nats-security.js";
import { stream } from "./sections/stream.js";
import { namespaces } from "./sections/namespaces.js";
import { fanout } from "./sections/fanout.js";
import { deltas } from "./sections/deltas.js";
import { backpressure } from "./sections/backpressure.js";
import { durable } from "./sections/durable.js";
import { auth } from "./sections/auth.js";
import { limits } from "./sections/limits.js";
import { reads } from "./sections/reads.js";
import { hooks } from "./sections/hooks.js";
import { events } from "./sections/events.js";
import { sse } from "./sections/sse.js";
import { presence } from "./sections/presence.js";
import { control } from "./sections/control.js";
import { log } from "./sections/log.js";

export type { ServerSection } from "./sections/server.js";
export type { BrokerSection } from "./sections/broker.js";
export type { NatsSecuritySection } from "./sections/nats-security.js";
export type { StreamSection } from "./sections/stream.js";
export type { NamespacesSection } from "./sections/namespaces.js";
export type { FanoutSection } from "./sections/fanout.js";
export type { DeltasSection } from "./sections/deltas.js";
export type { BackpressureSection } from "./sections/backpressure.js";
export type { DurableSection } from "./sections/durable.js";
export type { AuthSection } from "./sections/auth.js";
export type { LimitsSection } from "./sections/limits.js";
export type { ReadsSection } from "./sections/reads.js";
export type { HooksSection } from "./sections/hooks.js";
export type { EventKind, EventsSection, WebhookSection } from "./sections/events.js";
export type { SseSection } from "./sections/sse.js";
export type { PresenceSection } from "./sections/presence.js";
export type { ControlSection } from "./sections/control.js";
export type { LogSection } from "./sections/log.js";

/**
 * The configuration by component: each one gets its own section and nothing else (Centrifugo's `configtypes`
 * is the model). Each file under sections/ declares its settings and how its slice is built from them; this
 * list is the one place that names them all, in the order the docs show them. Every setting is declared in
 * exactly one section; `Config`, the flat result of parsing env and flags, has one entry per setting.
 */
export const SECTIONS = [
  server,
  broker,
  natsSecurity,
  stream,
  namespaces,
  fanout,
  deltas,
  backpressure,
  durable,
  auth,
  limits,
  reads,
  hooks,
  events,
  sse,
  presence,
  control,
  log,
] as const;

type AnySection = (typeof SECTIONS)[number];
type UnionToIntersection<U> = (U extends unknown ? (x: U) => void : never) extends (x: infer I) => void ? I : never;
type AllSettings = UnionToIntersection<AnySection["settings"]>;

export type SettingKey = keyof AllSettings & string;

/** The gateway's whole configuration, parsed once from env and flags, then frozen. */
export type Config = ValuesOf<AllSettings>;

export type Sections = Readonly<{ [S in AnySection as S["name"]]: SliceOf<S["settings"], S["slice"]> }>;

// The build fails here, naming them, when a section declares settings that no field of its slice reads.
type Unreached = { [S in AnySection as S["name"]]: Uncovered<S["settings"], S["slice"]> }[AnySection["name"]];
export const everySettingReachesItsSlice: [Unreached] extends [never] ? true : { unreached: Unreached } = true;

// And here when a derived field reads something the parsed config does not have.
type InputOf<M> = M extends { get: (c: infer I) => unknown } ? I : M extends object ? { [F in keyof M]: InputOf<M[F]> }[keyof M] : never;
type BadInput = {
  [S in AnySection as S["name"]]: InputOf<S["slice"]> extends infer I ? (I extends unknown ? (Config extends I ? never : S["name"]) : never) : never;
}[AnySection["name"]];
export const everyDerivedFieldReadsConfig: [BadInput] extends [never] ? true : { readsMissingSettings: BadInput } = true;

/** Cuts the config into one frozen slice per component, once per process. */
export function sectionsOf(c: Config): Sections {
  const out: Record<string, unknown> = {};
  for (const s of SECTIONS) out[s.name] = s.build(c);
  return Object.freeze(out) as Sections;
}
