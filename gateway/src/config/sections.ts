import type { Config } from "./config.js";
import { controlPrefixOf, livePrefixOf } from "./config.js";
import { namespacesSection, type NamespacesSection } from "../namespaces/namespace.js";
import type { StreamSection } from "./stream-section.js";

export type { StreamSection };

/**
 * The configuration by component: each one gets its own section and nothing else (Centrifugo's
 * `configtypes` is the model). `Config` stays the flat result of parsing env and flags — one entry per
 * setting, the README's table — and `sectionsOf` cuts it into these, once per process.
 */
export type ServerSection = Readonly<{
  host: string;
  port: number;
  workers: number;
  idleTimeoutSec: number;
  shutdownTimeoutMs: number;
  restartBackoffMs: number;
  maxPayloadBytes: number;
  /** WebSocket permessage-deflate (COMPRESSION). */
  compression: "off" | "shared";
  tlsPort: number;
  tlsCertFile: string;
  tlsKeyFile: string;
  adminHost: string;
  adminPort: number;
  /** Batch publish bounds (PUBLISH_BATCH_MAX_ITEMS, PUBLISH_BATCH_MAX_BYTES). */
  publishBatchMaxItems: number;
  publishBatchMaxBytes: number;
  /** The uWebSockets.js module to load (UWS_MODULE). */
  uwsModule: string;
}>;
/** How the gateway authenticates to NATS and whether it speaks TLS to it: file paths, read by broker/jetstream/nats-security.ts. */
export type NatsSecuritySection = Readonly<{
  credsFile: string;
  nkeySeedFile: string;
  user: string;
  passwordFile: string;
  tokenFile: string;
  tlsCaFile: string;
  tlsCertFile: string;
  tlsKeyFile: string;
  tlsFirst: boolean;
}>;
export type BrokerSection = Readonly<{
  kind: "jetstream" | "redis";
  natsUrl: string[];
  /** Credentials and TLS for every connection to natsUrl (main, direct gets, the primary's). */
  natsSecurity: NatsSecuritySection;
  /** Direct gets on a connection of their own (own) or on the main one (shared). */
  replayConnection: "own" | "shared";
  natsDataDir: string;
  /** Encrypts the embedded server's JetStream store with the key in this file; "" off. */
  natsStoreKeyFile: string;
  natsStoreCipher: "chachapoly" | "aes";
  natsServerBin: string;
  redisUrl: string;
  redisServerBin: string;
  /** Direct gets waiting to be sent, at most (the live feeds' repairs are never refused). */
  directGetQueue: number;
}>;
/** Live feeds, catch-ups and per-connection subscriptions. */
export type FanoutSection = Readonly<{
  lingerMs: number;
  replayCacheBytes: number;
  /** Live messages (and their bytes) a catch-up holds at most. */
  holdMessages: number;
  holdBytes: number;
  /** A catch-up not joined by then ends with a temporary error. */
  catchupDeadlineMs: number;
  maxSubscriptions: number;
}>;
/** Reads of stored messages by HTTP (history) and SSE: answer size and per-IP / per-user allowances. */
export type ReadsSection = Readonly<{
  historyMaxBytes: number;
  ratePerIp: number;
  burstPerIp: number;
  ratePerUser: number;
  burstPerUser: number;
  concurrentPerIp: number;
}>;
/** Slow sockets (ws/backpressure.ts) and how far a catch-up may fill a socket. */
export type BackpressureSection = Readonly<{ bytes: number; maxBytes: number; slowTimeoutMs: number }>;
/** Server-Sent Events streams (sse/): heartbeat comments and the client's reconnection delay. */
export type SseSection = Readonly<{ heartbeatMs: number; retryMs: number }>;
export type DurableSection = Readonly<{ ackWaitMs: number; maxDeliver: number; maxInflight: number; inactiveMs: number; maxPerUser: number }>;
/** Presence (presence/, broker/jetstream/presence.ts). */
export type PresenceSection = Readonly<{ bucket: string; ttlMs: number; maxMembers: number; replicas: number; storage: "file" | "memory" }>;
export type AuthSection = Readonly<{
  jwtSecret: string;
  jwtPublicKeyFile: string;
  jwtJwksFile: string;
  jwtAlgorithms: readonly string[];
  jwtIssuer: string;
  jwtAudience: string;
  jwtClockToleranceSec: number;
  apiKeys: readonly string[];
}>;
export type LimitsSection = Readonly<{
  allowedOrigins: readonly string[];
  maxConnections: number;
  maxConnectionsPerIp: number;
  connectRatePerIp: number;
  connectBurstPerIp: number;
  frameRate: number;
  frameBurst: number;
  frameRateWindowMs: number;
}>;

/** Hooks to the application backend (auth/hooks.ts). */
export type HooksSection = Readonly<{
  connectUrl: string;
  subscribeUrl: string;
  timeoutMs: number;
  cacheTtlMs: number;
  cacheSize: number;
  headers: readonly string[];
}>;

/** The control plane (control/): its NATS subjects and how long a request gathers the workers' answers. */
export type ControlSection = Readonly<{
  /** CONTROL_SUBJECT_PREFIX, or `<SUBJECT_PREFIX>ctl`. */
  subjectPrefix: string;
  timeoutMs: number;
  settleMs: number;
}>;

export type Sections = Readonly<{
  server: ServerSection;
  broker: BrokerSection;
  stream: StreamSection;
  /** Channel prefixes with a stream and features of their own (NAMESPACES_FILE); empty without it. */
  namespaces: NamespacesSection;
  fanout: FanoutSection;
  backpressure: BackpressureSection;
  durable: DurableSection;
  auth: AuthSection;
  limits: LimitsSection;
  reads: ReadsSection;
  hooks: HooksSection;
  sse: SseSection;
  presence: PresenceSection;
  control: ControlSection;
  logLevel: Config["logLevel"];
}>;

export function sectionsOf(c: Config): Sections {
  const stream: StreamSection = Object.freeze({
    name: c.streamName,
    subjectPrefix: c.subjectPrefix,
    livePrefix: livePrefixOf(c),
    storage: c.streamStorage,
    replicas: c.streamReplicas,
    maxAgeMs: c.streamMaxAge,
    maxMsgsPerSubject: c.streamMaxMsgsPerSubject,
    maxBytes: c.streamMaxBytes,
    duplicateWindowMs: c.streamDuplicateWindow,
    maxConsumers: c.streamMaxConsumers,
    update: c.updateStream,
    checkIntervalMs: c.streamCheckIntervalMs,
    repair: c.streamRepair === "repair",
    allowMsgTtl: false,
  });
  return Object.freeze({
    server: Object.freeze({
      host: c.host,
      port: c.port,
      workers: c.workers,
      idleTimeoutSec: c.idleTimeoutSec,
      shutdownTimeoutMs: c.shutdownTimeoutMs,
      restartBackoffMs: c.restartBackoffMs,
      maxPayloadBytes: c.maxPayloadBytes,
      compression: c.compression,
      tlsPort: c.tlsPort,
      tlsCertFile: c.tlsCertFile,
      tlsKeyFile: c.tlsKeyFile,
      adminHost: c.adminHost,
      adminPort: c.adminPort,
      publishBatchMaxItems: c.publishBatchMaxItems,
      publishBatchMaxBytes: c.publishBatchMaxBytes,
      uwsModule: c.uwsModule,
    }),
    broker: Object.freeze({
      kind: c.broker,
      natsUrl: c.natsUrl,
      natsSecurity: Object.freeze({
        credsFile: c.natsCredsFile,
        nkeySeedFile: c.natsNkeySeedFile,
        user: c.natsUser,
        passwordFile: c.natsPasswordFile,
        tokenFile: c.natsTokenFile,
        tlsCaFile: c.natsTlsCaFile,
        tlsCertFile: c.natsTlsCertFile,
        tlsKeyFile: c.natsTlsKeyFile,
        tlsFirst: c.natsTlsFirst,
      }),
      replayConnection: c.replayConnection,
      natsDataDir: c.natsDataDir,
      natsStoreKeyFile: c.natsStoreKeyFile,
      natsStoreCipher: c.natsStoreCipher,
      natsServerBin: c.natsServerBin,
      redisUrl: c.redisUrl,
      redisServerBin: c.redisServerBin,
      directGetQueue: c.directGetQueue,
    }),
    stream,
    namespaces: namespacesSection(c.namespaces.namespaces, stream),
    fanout: Object.freeze({
      lingerMs: c.feedLingerMs,
      replayCacheBytes: c.replayCacheBytes,
      holdMessages: c.catchupBufferMessages,
      holdBytes: c.catchupBufferBytes,
      catchupDeadlineMs: c.catchupDeadlineMs,
      maxSubscriptions: c.maxSubscriptions,
    }),
    backpressure: Object.freeze({ bytes: c.backpressureBytes, maxBytes: c.maxBackpressureBytes, slowTimeoutMs: c.slowConsumerTimeoutMs }),
    durable: Object.freeze({
      ackWaitMs: c.durableAckWaitMs,
      maxDeliver: c.durableMaxDeliver,
      maxInflight: c.durableMaxInflight,
      inactiveMs: c.durableInactiveMs,
      maxPerUser: c.durableMaxPerUser,
    }),
    auth: Object.freeze({
      jwtSecret: c.jwtSecret,
      jwtPublicKeyFile: c.jwtPublicKeyFile,
      jwtJwksFile: c.jwtJwksFile,
      jwtAlgorithms: c.jwtAlgorithms,
      jwtIssuer: c.jwtIssuer,
      jwtAudience: c.jwtAudience,
      jwtClockToleranceSec: c.jwtClockToleranceSec,
      apiKeys: c.apiKeys,
    }),
    limits: Object.freeze({
      allowedOrigins: c.allowedOrigins,
      maxConnections: c.maxConnections,
      maxConnectionsPerIp: c.maxConnectionsPerIp,
      connectRatePerIp: c.connectRatePerIp,
      connectBurstPerIp: c.connectBurstPerIp,
      frameRate: c.frameRate,
      frameBurst: c.frameBurst,
      frameRateWindowMs: c.frameRateWindowMs,
    }),
    reads: Object.freeze({
      historyMaxBytes: c.historyMaxBytes,
      ratePerIp: c.readRatePerIp,
      burstPerIp: c.readBurstPerIp,
      ratePerUser: c.readRatePerUser,
      burstPerUser: c.readBurstPerUser,
      concurrentPerIp: c.historyConcurrencyPerIp,
    }),
    hooks: Object.freeze({
      connectUrl: c.connectHookUrl,
      subscribeUrl: c.subscribeHookUrl,
      timeoutMs: c.hookTimeoutMs,
      cacheTtlMs: c.hookCacheTtlMs,
      cacheSize: c.hookCacheSize,
      headers: c.hookHeaders,
    }),
    control: Object.freeze({ subjectPrefix: controlPrefixOf(c), timeoutMs: c.controlTimeout, settleMs: c.controlSettle }),
    sse: Object.freeze({ heartbeatMs: c.sseHeartbeatMs, retryMs: c.sseRetryMs }),
    presence: Object.freeze({
      bucket: c.presenceBucket,
      ttlMs: c.presenceTtlMs,
      maxMembers: c.presenceMaxMembers,
      replicas: c.streamReplicas,
      storage: c.streamStorage,
    }),
    logLevel: c.logLevel,
  });
}
