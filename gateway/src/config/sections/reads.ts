import { type SettingTable, type SliceOf, type ValuesOf, int, positiveOrUnlimited, section } from "../section-kit.js";
import { parseBytes, parseIntStrict } from "../parse.js";

const settings = {
  historyMaxBytes: {
    env: "HISTORY_MAX_BYTES",
    shown: "1MiB",
    doc: "Largest HTTP history answer (messages and last values); the rest comes with `next` (a single larger message is answered alone)",
    default: () => 1_048_576,
    parse: parseBytes,
    check: int(4_096, 268_435_456),
  },
  readRatePerIp: {
    env: "READ_RATE_PER_IP",
    shown: "50",
    doc: "HTTP history requests and SSE stream opens per second per client IP per worker (token bucket; HTTP 429 `rate_limited` with Retry-After); -1 unlimited",
    default: () => 50,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  readBurstPerIp: {
    env: "READ_BURST_PER_IP",
    shown: "200",
    doc: "Bucket size of READ_RATE_PER_IP: reads one IP may make at once",
    default: () => 200,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  readRatePerUser: {
    env: "READ_RATE_PER_USER",
    shown: "50",
    doc: "The same reads per second per authenticated user (JWT `sub`) per worker, from any IP; -1 unlimited",
    default: () => 50,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  readBurstPerUser: {
    env: "READ_BURST_PER_USER",
    shown: "200",
    doc: "Bucket size of READ_RATE_PER_USER",
    default: () => 200,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  historyConcurrencyPerIp: {
    env: "HISTORY_CONCURRENCY_PER_IP",
    shown: "8",
    doc: "HTTP history requests answered at once per client IP per worker; more get HTTP 429 `rate_limited`; -1 unlimited",
    default: () => 8,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
} satisfies SettingTable;

export type ReadsValues = ValuesOf<typeof settings>;

export const reads = section({
  name: "reads",
  title: "Reads of stored messages by HTTP (history) and SSE: answer size and per-IP / per-user allowances",
  settings,
  slice: {
    historyMaxBytes: "historyMaxBytes",
    ratePerIp: "readRatePerIp",
    burstPerIp: "readBurstPerIp",
    ratePerUser: "readRatePerUser",
    burstPerUser: "readBurstPerUser",
    concurrentPerIp: "historyConcurrencyPerIp",
  },
});

export type ReadsSection = SliceOf<typeof settings, typeof reads.slice>;
