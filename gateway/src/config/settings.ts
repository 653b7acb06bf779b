import { availableParallelism } from "node:os";
import { parseBool, parseBytes, parseDuration, parseIntStrict, parseList } from "./parse.js";

/** How one setting is read: its env var, its CLI flag, its parser, its default and its doc line. */
export type Setting<T> = {
  env: string;
  flag: string;
  doc: string;
  /** Default as shown in docs. */
  shown: string;
  default: () => T;
  parse: (raw: string) => T;
  check?: (v: T) => string | undefined;
  /** Boolean flags take no value on the command line. */
  boolean?: boolean;
};

const int = (min: number, max: number) => (v: number) => (v < min || v > max ? `must be between ${min} and ${max}` : undefined);
const oneOf =
  <T extends string>(...values: T[]) =>
  (raw: string): T => {
    const v = raw.trim() as T;
    if (!values.includes(v)) throw new Error(`"${raw}" is not one of ${values.join(", ")}`);
    return v;
  };
const checkHttpUrl = (v: string): string | undefined => {
  if (v === "") return undefined;
  try {
    const u = new URL(v);
    return u.protocol === "http:" || u.protocol === "https:" ? undefined : "must be an http(s) URL";
  } catch {
    return "must be an http(s) URL";
  }
};
const positiveOrUnlimited = (v: number) => (v === 0 || v < -1 ? "must be positive, or -1 for unlimited" : undefined);

/** JWS algorithms the gateway verifies (never `none`). */
export const JWT_ALGORITHMS = ["HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];

export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** The settings table. Keys are the config field names; README's table is printed from this (`--help`). */
export const SETTINGS = {
  port: {
    env: "PORT",
    flag: "port",
    shown: "9000",
    doc: "HTTP and WebSocket port; 0 picks a free one",
    default: () => 9000,
    parse: parseIntStrict,
    check: int(0, 65535),
  },
  host: { env: "HOST", flag: "host", shown: "0.0.0.0", doc: "Address to listen on", default: () => "0.0.0.0", parse: (s: string) => s.trim() },
  adminHost: {
    env: "ADMIN_HOST",
    flag: "admin-host",
    shown: "127.0.0.1",
    doc: "Address of the admin listener (/metrics, /v1/stats); 0.0.0.0 to let a scraper in another host or pod reach it",
    default: () => "127.0.0.1",
    parse: (s: string) => s.trim(),
  },
  adminPort: {
    env: "ADMIN_PORT",
    flag: "admin-port",
    shown: "auto",
    doc: "Admin listener port: /metrics and /v1/stats move off the public port to it. auto: 9100 when authentication is on, none when off; off: none; 0 picks a free one",
    default: () => -2,
    parse: (s: string) => (s.trim() === "auto" ? -2 : s.trim() === "off" ? -1 : parseIntStrict(s)),
    check: (v: number) => (v < -2 || v > 65535 ? "must be auto, off, or a port from 0 to 65535" : undefined),
  },
  workers: {
    env: "WORKERS",
    flag: "workers",
    shown: "CPU count",
    doc: "Worker processes (node:cluster)",
    default: () => availableParallelism(),
    parse: parseIntStrict,
    check: int(1, 256),
  },
  broker: {
    env: "BROKER",
    flag: "broker",
    shown: "jetstream",
    doc: "Message broker: jetstream, or redis (pub/sub baseline: no replay, no durable)",
    default: () => "jetstream" as "jetstream" | "redis",
    parse: oneOf("jetstream", "redis"),
  },
  natsUrl: {
    env: "NATS_URL",
    flag: "nats-url",
    shown: "(embedded)",
    doc: "Comma list of NATS URLs; unset starts an embedded nats-server",
    default: () => [] as string[],
    parse: parseList,
  },
  natsDataDir: {
    env: "NATS_DATA_DIR",
    flag: "nats-data-dir",
    shown: "./data/nats",
    doc: "JetStream store of the embedded nats-server",
    default: () => "./data/nats",
    parse: (s: string) => s.trim(),
  },
  natsServerBin: {
    env: "NATS_SERVER_BIN",
    flag: "nats-server-bin",
    shown: ".tools/bin/nats-server",
    doc: "nats-server binary for the embedded server",
    default: () => "",
    parse: (s: string) => s.trim(),
  },
  redisUrl: {
    env: "REDIS_URL",
    flag: "redis-url",
    shown: "(embedded)",
    doc: "Redis URL for --broker redis; unset starts an embedded redis-server",
    default: () => "",
    parse: (s: string) => s.trim(),
  },
  redisServerBin: {
    env: "REDIS_SERVER_BIN",
    flag: "redis-server-bin",
    shown: "redis-server",
    doc: "redis-server binary for the embedded server (--broker redis without REDIS_URL)",
    default: () => "redis-server",
    parse: (s: string) => s.trim(),
  },
  streamName: {
    env: "STREAM_NAME",
    flag: "stream-name",
    shown: "EVENTS",
    doc: "JetStream stream holding all channels",
    default: () => "EVENTS",
    parse: (s: string) => s.trim(),
    check: (v: string) => (/^[A-Za-z0-9_-]+$/.test(v) ? undefined : "must be letters, digits, _ or -"),
  },
  subjectPrefix: {
    env: "SUBJECT_PREFIX",
    flag: "subject-prefix",
    shown: "ev",
    doc: "Subject prefix: channel orders.eu is subject <prefix>.orders.eu",
    default: () => "ev",
    parse: (s: string) => s.trim(),
    check: (v: string) => (/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(v) ? undefined : "must be dot-separated tokens of letters, digits, _ or -"),
  },
  liveSubjectPrefix: {
    env: "LIVE_SUBJECT_PREFIX",
    flag: "live-subject-prefix",
    shown: "<prefix>live",
    doc: "Prefix the stream republishes every stored message under for live delivery (core NATS, no consumer); must not overlap the stream's subjects",
    default: () => "",
    parse: (s: string) => s.trim(),
    check: (v: string) => (v === "" || /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(v) ? undefined : "must be dot-separated tokens of letters, digits, _ or -"),
  },
  streamMaxConsumers: {
    env: "STREAM_MAX_CONSUMERS",
    flag: "stream-max-consumers",
    shown: "10000",
    doc: "Consumers the stream allows (durable subscriptions are its only consumers; nats-server 2.15 defaults to 1000); -1 unlimited",
    default: () => 10_000,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  streamStorage: {
    env: "STREAM_STORAGE",
    flag: "stream-storage",
    shown: "file",
    doc: "Stream storage: file or memory",
    default: () => "file" as "file" | "memory",
    parse: oneOf("file", "memory"),
  },
  streamReplicas: {
    env: "STREAM_REPLICAS",
    flag: "stream-replicas",
    shown: "1",
    doc: "Stream replicas (1, 3 or 5 on a cluster)",
    default: () => 1,
    parse: parseIntStrict,
    check: int(1, 5),
  },
  streamMaxAge: {
    env: "STREAM_MAX_AGE",
    flag: "stream-max-age",
    shown: "24h",
    doc: "Oldest message kept; 0 keeps forever",
    default: () => 86_400_000,
    parse: parseDuration,
  },
  streamMaxMsgsPerSubject: {
    env: "STREAM_MAX_MSGS_PER_SUBJECT",
    flag: "stream-max-msgs-per-subject",
    shown: "-1",
    doc: "Messages kept per channel; -1 unlimited",
    default: () => -1,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  streamMaxBytes: {
    env: "STREAM_MAX_BYTES",
    flag: "stream-max-bytes",
    shown: "1GiB",
    doc: "Stream size limit; -1 unlimited",
    default: () => 1_073_741_824,
    parse: parseBytes,
    check: positiveOrUnlimited,
  },
  streamDuplicateWindow: {
    env: "STREAM_DUPLICATE_WINDOW",
    flag: "stream-duplicate-window",
    shown: "2m",
    doc: "Window in which a repeated msgId / Idempotency-Key is stored once",
    default: () => 120_000,
    parse: parseDuration,
    check: (v: number) => (v < 100 ? "must be at least 100ms" : undefined),
  },
  updateStream: {
    env: "UPDATE_STREAM",
    flag: "update-stream",
    shown: "false",
    doc: "Update an existing stream whose config differs instead of exiting",
    default: () => false,
    parse: parseBool,
    boolean: true,
  },
  maxPayloadBytes: {
    env: "MAX_PAYLOAD_BYTES",
    flag: "max-payload-bytes",
    shown: "64KiB",
    doc: "Largest inbound WebSocket frame or HTTP body; larger frames close with 1009",
    default: () => 65_536,
    parse: parseBytes,
    check: int(256, 16_777_216),
  },
  maxSubscriptions: {
    env: "MAX_SUBSCRIPTIONS",
    flag: "max-subscriptions",
    shown: "100",
    doc: "Subscriptions per connection",
    default: () => 100,
    parse: parseIntStrict,
    check: int(1, 100_000),
  },
  backpressureBytes: {
    env: "BACKPRESSURE_BYTES",
    flag: "backpressure-bytes",
    shown: "256KiB",
    doc: "Buffered bytes above which a socket leaves live delivery (slow client)",
    default: () => 262_144,
    parse: parseBytes,
    check: int(1_024, 1_073_741_824),
  },
  maxBackpressureBytes: {
    env: "MAX_BACKPRESSURE_BYTES",
    flag: "max-backpressure-bytes",
    shown: "8MiB",
    doc: "Hard per-socket buffer cap (uWS maxBackpressure)",
    default: () => 8_388_608,
    parse: parseBytes,
    check: int(4_096, 1_073_741_824),
  },
  slowConsumerTimeoutMs: {
    env: "SLOW_CONSUMER_TIMEOUT",
    flag: "slow-consumer-timeout",
    shown: "30s",
    doc: "A socket stuck over its buffer limit this long is closed with 4008",
    default: () => 30_000,
    parse: parseDuration,
    check: int(100, 3_600_000),
  },
  consumerLingerMs: {
    env: "CONSUMER_LINGER",
    flag: "consumer-linger",
    shown: "2s",
    doc: "How long a worker's live feed of a pattern (a core NATS subscription) outlives its last local subscriber",
    default: () => 2_000,
    parse: parseDuration,
    check: int(0, 600_000),
  },
  idleTimeoutSec: {
    env: "IDLE_TIMEOUT",
    flag: "idle-timeout",
    shown: "120s",
    doc: "Idle WebSocket timeout; the server pings before it expires",
    default: () => 120,
    parse: (s: string) => Math.round(parseDuration(s) / 1000),
    check: int(8, 960),
  },
  shutdownTimeoutMs: {
    env: "SHUTDOWN_TIMEOUT",
    flag: "shutdown-timeout",
    shown: "10s",
    doc: "Bound on the graceful drain at SIGTERM/SIGINT",
    default: () => 10_000,
    parse: parseDuration,
    check: int(100, 600_000),
  },
  restartBackoffMs: {
    env: "RESTART_BACKOFF",
    flag: "restart-backoff",
    shown: "500ms",
    doc: "First delay before restarting a crashed worker (doubles to 30 s)",
    default: () => 500,
    parse: parseDuration,
    check: int(0, 60_000),
  },
  replayCacheBytes: {
    env: "REPLAY_CACHE_BYTES",
    flag: "replay-cache-bytes",
    shown: "64MiB",
    doc: "Per worker: stored pages kept for sockets catching up the same pattern (they share reads)",
    default: () => 67_108_864,
    parse: parseBytes,
    check: int(1_048_576, 17_179_869_184),
  },
  catchupBufferMessages: {
    env: "CATCHUP_BUFFER_MESSAGES",
    flag: "catchup-buffer-messages",
    shown: "10000",
    doc: "Live messages held per catching-up subscription while its replay finishes",
    default: () => 10_000,
    parse: parseIntStrict,
    check: int(10, 1_000_000),
  },
  durableAckWaitMs: {
    env: "DURABLE_ACK_WAIT",
    flag: "durable-ack-wait",
    shown: "30s",
    doc: "Durable subscriptions: redelivery after this long without an ack",
    default: () => 30_000,
    parse: parseDuration,
    check: int(100, 86_400_000),
  },
  durableMaxDeliver: {
    env: "DURABLE_MAX_DELIVER",
    flag: "durable-max-deliver",
    shown: "10",
    doc: "Durable subscriptions: deliveries of one message before it is given up; -1 unlimited",
    default: () => 10,
    parse: parseIntStrict,
    check: (v: number) => (v === 0 || v < -1 ? "must be positive, or -1 for unlimited" : undefined),
  },
  durableMaxInflight: {
    env: "DURABLE_MAX_INFLIGHT",
    flag: "durable-max-inflight",
    shown: "100",
    doc: "Durable subscriptions: default maxInflight (max_ack_pending)",
    default: () => 100,
    parse: parseIntStrict,
    check: int(1, 10_000),
  },
  durableInactiveMs: {
    env: "DURABLE_INACTIVE_THRESHOLD",
    flag: "durable-inactive-threshold",
    shown: "15m",
    doc: "Durable consumers nobody is bound to are deleted after this long",
    default: () => 900_000,
    parse: parseDuration,
    check: int(1_000, 31_536_000_000),
  },
  // Authentication and abuse limits (gateway/AUTH.md). Any JWT key setting turns authentication on.
  jwtSecret: {
    env: "JWT_SECRET",
    flag: "jwt-secret",
    shown: "(unset)",
    doc: "HMAC secret (HS256/384/512), at least 32 characters; setting it turns authentication on",
    default: () => "",
    parse: (s: string) => s.trim(),
    check: (v: string) => (v.length > 0 && v.length < 32 ? "must be at least 32 characters" : undefined),
  },
  jwtPublicKeyFile: {
    env: "JWT_PUBLIC_KEY_FILE",
    flag: "jwt-public-key-file",
    shown: "(unset)",
    doc: "PEM public key (SPKI) or X.509 certificate for RS/PS/ES/EdDSA tokens; turns authentication on",
    default: () => "",
    parse: (s: string) => s.trim(),
  },
  jwtJwksFile: {
    env: "JWT_JWKS_FILE",
    flag: "jwt-jwks-file",
    shown: "(unset)",
    doc: 'Local JWKS file ({"keys":[...]}, read once at start; tokens pick a key by kid); turns authentication on',
    default: () => "",
    parse: (s: string) => s.trim(),
  },
  jwtAlgorithms: {
    env: "JWT_ALGORITHMS",
    flag: "jwt-algorithms",
    shown: "(by key)",
    doc: "Accepted JWS algorithms; default HS256 for a secret, the key type's for a PEM, each key's alg (or type) for a JWKS",
    default: () => [] as string[],
    parse: parseList,
    check: (v: string[]) => {
      const bad = v.find((a) => !JWT_ALGORITHMS.includes(a));
      return bad ? `has "${bad}"; use ${JWT_ALGORITHMS.join(", ")}` : undefined;
    },
  },
  jwtIssuer: { env: "JWT_ISSUER", flag: "jwt-issuer", shown: "(any)", doc: "Required `iss` claim", default: () => "", parse: (s: string) => s.trim() },
  jwtAudience: {
    env: "JWT_AUDIENCE",
    flag: "jwt-audience",
    shown: "(any)",
    doc: "Required `aud` claim (one of the token's audiences)",
    default: () => "",
    parse: (s: string) => s.trim(),
  },
  jwtClockToleranceSec: {
    env: "JWT_CLOCK_TOLERANCE",
    flag: "jwt-clock-tolerance",
    shown: "5s",
    doc: "Clock skew allowed on exp/nbf/iat",
    default: () => 5,
    parse: (s: string) => Math.round(parseDuration(s) / 1000),
    check: int(0, 300),
  },
  apiKeys: {
    env: "API_KEYS",
    flag: "api-keys",
    shown: "(none)",
    doc: "Comma list of keys (16+ characters) for HTTP publish and history (X-Api-Key header); needs authentication on",
    default: () => [] as string[],
    parse: parseList,
    check: (v: string[]) => (v.some((k) => k.length < 16 || /\s/.test(k)) ? "keys must be at least 16 characters without spaces" : undefined),
  },
  allowedOrigins: {
    env: "ALLOWED_ORIGINS",
    flag: "allowed-origins",
    shown: "(any)",
    doc: "Browser origins allowed to open a WebSocket (https://app.example.com, https://*.example.com); others get 403",
    default: () => [] as string[],
    parse: parseList,
    check: (v: string[]) => {
      const bad = v.find((o) => !/^https?:\/\/(\*\.)?[A-Za-z0-9.-]+(:\d+)?$/.test(o));
      return bad ? `has "${bad}": use scheme://host[:port], optionally scheme://*.domain` : undefined;
    },
  },
  tlsPort: {
    env: "TLS_PORT",
    flag: "tls-port",
    shown: "9443",
    doc: "HTTPS/WSS port, served when TLS_CERT_FILE and TLS_KEY_FILE are set; 0 picks a free one",
    default: () => 9443,
    parse: parseIntStrict,
    check: int(0, 65535),
  },
  tlsCertFile: {
    env: "TLS_CERT_FILE",
    flag: "tls-cert-file",
    shown: "(unset)",
    doc: "PEM certificate (chain) for the TLS listener",
    default: () => "",
    parse: (s: string) => s.trim(),
  },
  tlsKeyFile: {
    env: "TLS_KEY_FILE",
    flag: "tls-key-file",
    shown: "(unset)",
    doc: "PEM private key for the TLS listener",
    default: () => "",
    parse: (s: string) => s.trim(),
  },
  maxConnections: {
    env: "MAX_CONNECTIONS",
    flag: "max-connections",
    shown: "50000",
    doc: "WebSocket connections per worker; upgrades beyond get HTTP 503",
    default: () => 50_000,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  maxConnectionsPerIp: {
    env: "MAX_CONNECTIONS_PER_IP",
    flag: "max-connections-per-ip",
    shown: "1000",
    doc: "WebSocket connections per client IP per worker; beyond get HTTP 429; -1 unlimited",
    default: () => 1_000,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  connectRatePerIp: {
    env: "CONNECT_RATE_PER_IP",
    flag: "connect-rate-per-ip",
    shown: "50",
    doc: "New WebSocket connections per second per client IP per worker (token bucket; HTTP 429); -1 unlimited",
    default: () => 50,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  connectBurstPerIp: {
    env: "CONNECT_BURST_PER_IP",
    flag: "connect-burst-per-ip",
    shown: "500",
    doc: "Bucket size of CONNECT_RATE_PER_IP: connections one IP may open at once",
    default: () => 500,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  frameRate: {
    env: "FRAME_RATE",
    flag: "frame-rate",
    shown: "100",
    doc: "Inbound frames per second per connection (token bucket): over it `rate_limited`, again within FRAME_RATE_WINDOW close 4029; -1 unlimited",
    default: () => 100,
    parse: parseIntStrict,
    check: positiveOrUnlimited,
  },
  frameBurst: {
    env: "FRAME_BURST",
    flag: "frame-burst",
    shown: "200",
    doc: "Bucket size of FRAME_RATE: frames a connection may send at once",
    default: () => 200,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  frameRateWindowMs: {
    env: "FRAME_RATE_WINDOW",
    flag: "frame-rate-window",
    shown: "10s",
    doc: "A second frame-rate breach within this long after a `rate_limited` closes with 4029",
    default: () => 10_000,
    parse: parseDuration,
    check: int(100, 3_600_000),
  },
  // Hooks to the application backend (auth/hooks.ts): allow or deny connections and subscriptions.
  connectHookUrl: {
    env: "CONNECT_HOOK_URL",
    flag: "connect-hook-url",
    shown: "(unset)",
    doc: "POSTs each WebSocket upgrade (user, claims, ip, headers) here: allow, deny (403) or attach channels; unreachable: 503 hook_unavailable",
    default: () => "",
    parse: (s: string) => s.trim(),
    check: (v: string) => checkHttpUrl(v),
  },
  subscribeHookUrl: {
    env: "SUBSCRIBE_HOOK_URL",
    flag: "subscribe-hook-url",
    shown: "(unset)",
    doc: "POSTs each `sub` (user, channel, ip, connect info) here after the permission check: allow, or deny (`forbidden`); unreachable: `hook_unavailable`",
    default: () => "",
    parse: (s: string) => s.trim(),
    check: (v: string) => checkHttpUrl(v),
  },
  hookTimeoutMs: {
    env: "HOOK_TIMEOUT",
    flag: "hook-timeout",
    shown: "2s",
    doc: "A hook call not answered by then fails closed (`hook_unavailable`)",
    default: () => 2_000,
    parse: parseDuration,
    check: int(10, 60_000),
  },
  hookCacheTtlMs: {
    env: "HOOK_CACHE_TTL",
    flag: "hook-cache-ttl",
    shown: "10s",
    doc: "Subscribe-hook answers are reused per user and channel for this long; 0 disables the cache",
    default: () => 10_000,
    parse: parseDuration,
    check: int(0, 86_400_000),
  },
  hookCacheSize: {
    env: "HOOK_CACHE_SIZE",
    flag: "hook-cache-size",
    shown: "10000",
    doc: "Most subscribe-hook answers kept per worker (least recently used go first)",
    default: () => 10_000,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  hookHeaders: {
    env: "HOOK_HEADERS",
    flag: "hook-headers",
    shown: "origin,user-agent,cookie,x-forwarded-for",
    doc: "Upgrade request headers passed to the connect hook",
    default: () => ["origin", "user-agent", "cookie", "x-forwarded-for"],
    parse: (s: string) => parseList(s).map((h) => h.toLowerCase()),
    check: (v: string[]) => (v.find((h) => !/^[a-z0-9-]+$/.test(h)) ? "must be header names" : undefined),
  },
  compression: {
    env: "COMPRESSION",
    flag: "compression",
    shown: "off",
    doc: "WebSocket permessage-deflate: off, or shared (one compressor per socket, negotiated per client; costs CPU per delivery)",
    default: () => "off" as "off" | "shared",
    parse: oneOf("off", "shared"),
  },
  logLevel: {
    env: "LOG_LEVEL",
    flag: "log-level",
    shown: "info",
    doc: "pino level: fatal, error, warn, info, debug, trace, silent",
    default: () => "info" as LogLevel,
    parse: oneOf(...LOG_LEVELS),
  },
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- settings of every value type in one table
} satisfies Record<string, Setting<any>>;

export type SettingKey = keyof typeof SETTINGS;

/** The gateway's whole configuration, parsed once from env and flags, then frozen. */
export type Config = { readonly [K in SettingKey]: ReturnType<(typeof SETTINGS)[K]["default"]> };
