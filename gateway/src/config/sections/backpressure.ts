import { type SettingTable, type SliceOf, type ValuesOf, int, section } from "../section-kit.js";
import { parseBytes, parseDuration } from "../parse.js";

const settings = {
  backpressureBytes: {
    env: "BACKPRESSURE_BYTES",
    shown: "256KiB",
    doc: "Buffered bytes above which a socket leaves live delivery (slow client)",
    default: () => 262_144,
    parse: parseBytes,
    check: int(1_024, 1_073_741_824),
  },
  maxBackpressureBytes: {
    env: "MAX_BACKPRESSURE_BYTES",
    shown: "8MiB",
    doc: "Hard per-socket buffer cap (uWS maxBackpressure)",
    default: () => 8_388_608,
    parse: parseBytes,
    check: int(4_096, 1_073_741_824),
  },
  slowConsumerTimeoutMs: {
    env: "SLOW_CONSUMER_TIMEOUT",
    shown: "30s",
    doc: "A socket stuck over its buffer limit this long is closed with 4008",
    default: () => 30_000,
    parse: parseDuration,
    check: int(100, 3_600_000),
  },
} satisfies SettingTable;

export type BackpressureValues = ValuesOf<typeof settings>;

export const backpressure = section({
  name: "backpressure",
  title: "Slow sockets (ws/backpressure.ts) and how far a catch-up may fill a socket",
  settings,
  slice: { bytes: "backpressureBytes", maxBytes: "maxBackpressureBytes", slowTimeoutMs: "slowConsumerTimeoutMs" },
});

export type BackpressureSection = SliceOf<typeof settings, typeof backpressure.slice>;
