import { type SettingTable, type SliceOf, type ValuesOf, int, positiveOrUnlimited, section } from "../section-kit.js";
import { parseDuration, parseIntStrict } from "../parse.js";

const settings = {
  durableAckWaitMs: {
    env: "DURABLE_ACK_WAIT",
    shown: "30s",
    doc: "Durable subscriptions: redelivery after this long without an ack",
    default: () => 30_000,
    parse: parseDuration,
    check: int(100, 86_400_000),
  },
  durableMaxDeliver: {
    env: "DURABLE_MAX_DELIVER",
    shown: "10",
    doc: "Durable subscriptions: deliveries of one message before it is given up; -1 unlimited",
    default: () => 10,
    parse: parseIntStrict,
    check: (v: number) => (v === 0 || v < -1 ? "must be positive, or -1 for unlimited" : undefined),
  },
  durableMaxInflight: {
    env: "DURABLE_MAX_INFLIGHT",
    shown: "100",
    doc: "Durable subscriptions: default maxInflight (max_ack_pending)",
    default: () => 100,
    parse: parseIntStrict,
    check: int(1, 10_000),
  },
  durableInactiveMs: {
    env: "DURABLE_INACTIVE_THRESHOLD",
    shown: "15m",
    doc: "Durable consumers nobody is bound to are deleted after this long",
    default: () => 900_000,
    parse: parseDuration,
    check: int(1_000, 31_536_000_000),
  },
  durableMaxPerUser: {
    env: "DURABLE_MAX_PER_USER",
    shown: "10",
    doc: "Durable names one user may hold (counted over the stream's consumers, all workers and instances); a further new name gets `too_many_durables`; -1 unlimited",
    default: () => 10,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
} satisfies SettingTable;

export type DurableValues = ValuesOf<typeof settings>;

export const durable = section({
  name: "durable",
  title: "Durable subscriptions (JetStream consumers)",
  settings,
  slice: {
    ackWaitMs: "durableAckWaitMs",
    maxDeliver: "durableMaxDeliver",
    maxInflight: "durableMaxInflight",
    inactiveMs: "durableInactiveMs",
    maxPerUser: "durableMaxPerUser",
  },
});

export type DurableSection = SliceOf<typeof settings, typeof durable.slice>;
