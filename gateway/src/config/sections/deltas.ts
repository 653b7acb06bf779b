import { type SettingTable, type SliceOf, type ValuesOf, int, section } from "../section-kit.js";
import { parseBytes, parseDuration, parseIntStrict } from "../parse.js";

// The bounds of per-channel Fossil deltas (fanout/deltas.ts, PROTOCOL.md "Deltas"). Past any of them a message
// is simply sent full: they trade bytes on the wire for a worker's memory and CPU, never correctness.
const settings = {
  deltaMaxChannels: {
    env: "DELTA_MAX_CHANNELS",
    shown: "10000",
    doc: "Per worker: channels whose last message is kept as the base of the next delta; past it the least recently updated is forgotten (its next message is full)",
    default: () => 10_000,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  deltaMaxBytes: {
    env: "DELTA_MAX_BYTES",
    shown: "64MiB",
    doc: "Per worker: payload bytes kept as delta bases over all channels (each holds its last two messages); past it the least recently updated channels are forgotten",
    default: () => 67_108_864,
    parse: parseBytes,
    check: int(65_536, 17_179_869_184),
  },
  deltaIdleMs: {
    env: "DELTA_IDLE",
    shown: "10m",
    doc: "A channel without a message for this long is forgotten by the worker (its next message is full)",
    default: () => 600_000,
    parse: parseDuration,
    check: int(1_000, 86_400_000),
  },
  deltaMaxPayloadBytes: {
    env: "DELTA_MAX_PAYLOAD_BYTES",
    shown: "256KiB",
    doc: "Payloads larger than this are always sent full and kept as no base (a delta's CPU grows with the payload); 0 sends every message full",
    default: () => 262_144,
    parse: parseBytes,
    check: int(0, 67_108_864),
  },
  deltaMaxChannelsPerSubscription: {
    env: "DELTA_MAX_CHANNELS_PER_SUBSCRIPTION",
    shown: "1000",
    doc: "Channels one delta subscription (a wildcard's) remembers; past it the oldest one's next message is full. At most 1,000, the bases the SDKs keep per subscription",
    default: () => 1_000,
    parse: parseIntStrict,
    check: int(1, 1_000),
  },
  deltaWorkPerByte: {
    env: "DELTA_WORK_PER_BYTE",
    shown: "8",
    doc: "The delta encoder's work allowed per byte of base plus payload (byte comparisons and hash-chain steps); a delta that would cost more goes full (fanout_deltas_skipped_total). Ordinary documents cost 0.5 to 2; payloads crafted to slow the encoder 60 to 170",
    default: () => 8,
    parse: parseIntStrict,
    check: int(1, 1_000),
  },
} satisfies SettingTable;

export type DeltasValues = ValuesOf<typeof settings>;

export const deltas = section({
  name: "deltas",
  title: "Per-channel Fossil deltas (fanout/deltas.ts): what a worker and a subscription remember as bases",
  settings,
  slice: {
    maxChannels: "deltaMaxChannels",
    maxBytes: "deltaMaxBytes",
    idleMs: "deltaIdleMs",
    maxPayloadBytes: "deltaMaxPayloadBytes",
    maxChannelsPerSubscription: "deltaMaxChannelsPerSubscription",
    workPerByte: "deltaWorkPerByte",
  },
});

export type DeltasSection = SliceOf<typeof settings, typeof deltas.slice>;
