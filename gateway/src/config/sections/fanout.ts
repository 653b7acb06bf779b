import { type SettingTable, type SliceOf, type ValuesOf, int, section } from "../section-kit.js";
import { parseBytes, parseDuration, parseIntStrict } from "../parse.js";

const settings = {
  feedLingerMs: {
    env: "FEED_LINGER",
    formerly: "CONSUMER_LINGER",
    shown: "2s",
    doc: "How long a worker's live feed of a pattern (a core NATS subscription) outlives its last local subscriber (formerly CONSUMER_LINGER, still read)",
    default: () => 2_000,
    parse: parseDuration,
    check: int(0, 600_000),
  },
  replayCacheBytes: {
    env: "REPLAY_CACHE_BYTES",
    shown: "64MiB",
    doc: "Per worker: stored pages kept for sockets catching up the same pattern (they share reads)",
    default: () => 67_108_864,
    parse: parseBytes,
    check: int(1_048_576, 17_179_869_184),
  },
  catchupBufferMessages: {
    env: "CATCHUP_BUFFER_MESSAGES",
    shown: "10000",
    doc: "Live messages held per catching-up subscription while its replay finishes",
    default: () => 10_000,
    parse: parseIntStrict,
    check: int(10, 1_000_000),
  },
  catchupBufferBytes: {
    env: "CATCHUP_BUFFER_BYTES",
    shown: "8MiB",
    doc: "Bytes of live messages held per catching-up subscription (with CATCHUP_BUFFER_MESSAGES); over either while the client is slow to read, the subscription ends with a temporary `slow_consumer` error",
    default: () => 8_388_608,
    parse: parseBytes,
    check: int(65_536, 1_073_741_824),
  },
  catchupDeadlineMs: {
    env: "CATCHUP_DEADLINE",
    shown: "60s",
    doc: "A catch-up (replay before joining live) not joined within this long ends with a temporary `slow_consumer` error; the client resumes from its last seq",
    default: () => 60_000,
    parse: parseDuration,
    check: int(1_000, 3_600_000),
  },
  catchupRetryForMs: {
    env: "CATCHUP_RETRY_FOR",
    shown: "16s",
    doc: "How long a catch-up keeps reading a page again that the broker failed to serve (a NATS failover electing leaders), waiting 250 ms, then twice as long each time; then the subscription ends with the broker's error (`broker_unavailable` or `broker_error`) and the client may subscribe again from its last seq. 0 gives up at the first failure",
    default: () => 16_000,
    parse: parseDuration,
    check: int(0, 600_000),
  },
  coalesceMs: {
    env: "COALESCE",
    shown: "0",
    doc: "Coalesced frames: live messages of one pattern within this window go out as one frame to the connections that read them (`coalesce=1`); 0 off; a namespace's `coalesce` overrides it (up to 1s)",
    default: () => 0,
    parse: parseDuration,
    check: int(0, 1_000),
  },
  maxSubscriptions: {
    env: "MAX_SUBSCRIPTIONS",
    shown: "100",
    doc: "Subscriptions per connection",
    default: () => 100,
    parse: parseIntStrict,
    check: int(1, 100_000),
  },
} satisfies SettingTable;

export type FanoutValues = ValuesOf<typeof settings>;

export const fanout = section({
  name: "fanout",
  title: "Live feeds, catch-ups and per-connection subscriptions",
  settings,
  slice: {
    lingerMs: "feedLingerMs",
    replayCacheBytes: "replayCacheBytes",
    holdMessages: "catchupBufferMessages",
    holdBytes: "catchupBufferBytes",
    catchupDeadlineMs: "catchupDeadlineMs",
    catchupRetryForMs: "catchupRetryForMs",
    maxSubscriptions: "maxSubscriptions",
    coalesceMs: "coalesceMs",
  },
});

export type FanoutSection = SliceOf<typeof settings, typeof fanout.slice>;
