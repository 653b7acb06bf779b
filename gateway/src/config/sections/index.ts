import { type SliceOf, type Uncovered, type ValuesOf } from "../section-kit.js";
import { server } from "./server.js";
import { broker } from "./broker.js";
import { natsSecurity } from "./nats-security.js";
import { stream } from "./stream.js";
import { regions } from "./regions.js";
import { namespaces } from "./namespaces.js";
import { fanout } from "./fanout.js";
import { deltas } from "./deltas.js";
import { backpressure } from "./backpressure.js";
import { durable } from "./durable.js";
import { auth } from "./auth.js";
import { limits } from "./limits.js";
import { reads } from "./reads.js";
import { hooks } from "./hooks.js";
import { events } from "./events.js";
import { sse } from "./sse.js";
import { presence } from "./presence.js";
import { control } from "./control.js";
import { log } from "./log.js";

export type { ServerSection } from "./server.js";
export type { BrokerSection } from "./broker.js";
export type { NatsSecuritySection } from "./nats-security.js";
export type { StreamSection } from "./stream.js";
export type { RegionsSection, RegionLayout } from "./regions.js";
export type { NamespacesSection } from "./namespaces.js";
export type { FanoutSection } from "./fanout.js";
export type { DeltasSection } from "./deltas.js";
export type { BackpressureSection } from "./backpressure.js";
export type { DurableSection } from "./durable.js";
export type { AuthSection } from "./auth.js";
export type { LimitsSection } from "./limits.js";
export type { ReadsSection } from "./reads.js";
export type { HookFormat, HookName, HooksSection } from "./hooks.js";
export type { EventKind, EventsSection, WebhookSection } from "./events.js";
export type { SseSection } from "./sse.js";
export type { PresenceSection } from "./presence.js";
export type { ControlSection } from "./control.js";
export type { LogSection } from "./log.js";

/**
 * The configuration by component: each one gets its own section and nothing else (Centrifugo's `configtypes`
 * is the model). Each other file in this folder declares its settings and how its slice is built from them; this
 * list is the one place that names them all, in the order the docs show them. Every setting is declared in
 * exactly one section; `Config`, the flat result of parsing env and flags, has one entry per setting.
 */
export const SECTIONS = [
  server,
  broker,
  natsSecurity,
  stream,
  regions,
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
