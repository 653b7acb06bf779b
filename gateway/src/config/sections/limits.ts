import { type SettingTable, type SliceOf, type ValuesOf, derive, int, positiveOrUnlimited, section } from "../section-kit.js";
import { parseDuration, parseIntStrict, parseList } from "../parse.js";

const settings = {
  allowedOrigins: {
    env: "ALLOWED_ORIGINS",
    shown: "(any)",
    doc: "Browser origins allowed to open a WebSocket or SSE stream and to publish (https://app.example.com, https://*.example.com, * for any); others get 403. Empty: any, except with authentication off and no connect hook: this host's pages only",
    default: () => [] as string[],
    parse: parseList,
    check: (v: string[]) => {
      const bad = v.find((o) => o !== "*" && !/^https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:\d+)?$/.test(o));
      return bad ? `has "${bad}": use scheme://host[:port], optionally scheme://*.domain, or * for any` : undefined;
    },
  },
  maxConnections: {
    env: "MAX_CONNECTIONS",
    shown: "50000",
    doc: "WebSocket connections per worker; upgrades beyond get HTTP 503",
    default: () => 50_000,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  maxConnectionsPerIp: {
    env: "MAX_CONNECTIONS_PER_IP",
    shown: "1000",
    doc: "WebSocket connections per client IP per worker; beyond get HTTP 429; -1 unlimited",
    default: () => 1_000,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  connectRatePerIp: {
    env: "CONNECT_RATE_PER_IP",
    shown: "50",
    doc: "New WebSocket connections per second per client IP per worker (token bucket; HTTP 429); -1 unlimited",
    default: () => 50,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  connectBurstPerIp: {
    env: "CONNECT_BURST_PER_IP",
    shown: "500",
    doc: "Bucket size of CONNECT_RATE_PER_IP: connections one IP may open at once",
    default: () => 500,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  frameRate: {
    env: "FRAME_RATE",
    shown: "100",
    doc: "Inbound frames per second per connection (token bucket): over it `rate_limited`, again within FRAME_RATE_WINDOW close 4029; -1 unlimited",
    default: () => 100,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  frameBurst: {
    env: "FRAME_BURST",
    shown: "200",
    doc: "Bucket size of FRAME_RATE: frames a connection may send at once",
    default: () => 200,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  frameRateWindowMs: {
    env: "FRAME_RATE_WINDOW",
    shown: "10s",
    doc: "A second frame-rate breach within this long after a `rate_limited` closes with 4029",
    default: () => 10_000,
    parse: parseDuration,
    check: int(100, 3_600_000),
  },
  publishRate: {
    env: "PUBLISH_RATE",
    shown: "1000",
    doc: "HTTP publish: messages per second per user (token `sub`, or the connect hook's user), or per client address when nobody is named, per worker; a batch counts each item; over it 429 `rate_limited` with Retry-After; -1 unlimited",
    default: () => 1_000,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  publishBurst: {
    env: "PUBLISH_BURST",
    shown: "10000",
    doc: "Bucket size of PUBLISH_RATE and PUBLISH_RATE_PER_KEY: messages published at once; a batch larger than what is left is let in and the publisher then waits until it is paid back",
    default: () => 10_000,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  publishRatePerKey: {
    env: "PUBLISH_RATE_PER_KEY",
    shown: "-1",
    doc: "HTTP publish: messages per second per API key (a trusted backend), per worker; -1 unlimited",
    default: () => -1,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
} satisfies SettingTable;

export type LimitsValues = ValuesOf<typeof settings>;

export const limits = section({
  name: "limits",
  title: "Abuse limits on connections, frames and HTTP publishes: origins, counts, rates",
  settings,
  slice: {
    allowedOrigins: "allowedOrigins",
    maxConnections: "maxConnections",
    maxConnectionsPerIp: "maxConnectionsPerIp",
    connectRatePerIp: "connectRatePerIp",
    connectBurstPerIp: "connectBurstPerIp",
    frameRate: "frameRate",
    frameBurst: "frameBurst",
    frameRateWindowMs: "frameRateWindowMs",
    /** HTTP publish messages per second per user or address, and per API key (-1 unlimited); one burst for both. */
    publish: derive(["publishRate", "publishBurst", "publishRatePerKey"], (c: Pick<LimitsValues, "publishRate" | "publishBurst" | "publishRatePerKey">) =>
      Object.freeze({ rate: c.publishRate, burst: c.publishBurst, ratePerKey: c.publishRatePerKey }),
    ),
  },
});

export type LimitsSection = SliceOf<typeof settings, typeof limits.slice>;
