import { type SettingTable, type SliceOf, type ValuesOf, derive, int, section, trimmed } from "../section-kit.js";
import type { StreamValues } from "./stream.js";
import { regionLayout, type RegionsValues } from "./regions.js";
import { parseDuration, parseIntStrict } from "../parse.js";

const settings = {
  presenceBucket: {
    env: "PRESENCE_BUCKET",
    shown: "PRESENCE",
    doc: "JetStream KV bucket holding presence (stream KV_<name>, with STREAM_STORAGE and STREAM_REPLICAS)",
    default: () => "PRESENCE",
    parse: trimmed,
    check: (v: string) => (/^[A-Za-z0-9_-]+$/.test(v) ? undefined : "must be letters, digits, _ or -"),
  },
  presenceTtlMs: {
    env: "PRESENCE_TTL",
    shown: "30s",
    doc: "Presence entries expire this long after their worker stopped refreshing them (a crash); refreshed every third of it",
    default: () => 30_000,
    parse: parseDuration,
    check: int(1_000, 3_600_000),
  },
  presenceMaxMembers: {
    env: "PRESENCE_MAX_MEMBERS",
    shown: "1000",
    doc: "Presence members per channel: a `sub` with presence:true past it gets `presence_full`; member lists are capped at it. Checked against the worker's own view of the channel, which learns of members elsewhere through the presence bucket's watch, so joins at the same moment on different workers can briefly pass it",
    default: () => 1_000,
    parse: parseIntStrict,
    check: int(1, 1_000_000),
  },
} satisfies SettingTable;

export type PresenceValues = ValuesOf<typeof settings>;

export const presence = section({
  name: "presence",
  title: "Presence (presence/, broker/jetstream/presence.ts); its bucket follows the stream's storage and replicas",
  settings,
  slice: {
    bucket: "presenceBucket",
    ttlMs: "presenceTtlMs",
    maxMembers: "presenceMaxMembers",
    replicas: derive([], (c: Pick<StreamValues, "streamReplicas">) => c.streamReplicas),
    storage: derive([], (c: Pick<StreamValues, "streamStorage">) => c.streamStorage),
    /** Regions: the bucket is made in the home region, with the channel streams (docs/operations.md "Regions"). */
    homeRegion: derive([], (c: RegionsValues) => regionLayout(c)?.home),
  },
});

export type PresenceSection = SliceOf<typeof settings, typeof presence.slice>;

/**
 * The presence bucket's subjects: its records (`$KV.<bucket>`), and where it republishes every record, TTL
 * markers included (`fgwpresence.<bucket>`: core NATS, the presence watch subscribes there). No other
 * prefix may overlap them (config.ts).
 */
export const presenceSubjects = (bucket: string): { records: string; live: string } => ({ records: `$KV.${bucket}`, live: `fgwpresence.${bucket}` });
