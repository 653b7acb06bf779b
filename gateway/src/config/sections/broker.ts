import { type SettingTable, type SliceOf, type ValuesOf, derive, int, oneOf, section, trimmed } from "../section-kit.js";
import { natsSecurity, type NatsSecurityValues } from "./nats-security.js";
import { parseIntStrict, parseList } from "../parse.js";

const settings = {
  broker: {
    env: "BROKER",
    shown: "jetstream",
    doc: "Message broker: jetstream, or redis (pub/sub baseline: no replay, no durable)",
    default: () => "jetstream" as "jetstream" | "redis",
    parse: oneOf("jetstream", "redis"),
  },
  natsUrl: {
    env: "NATS_URL",
    shown: "(embedded)",
    doc: "Comma list of NATS URLs; unset starts an embedded nats-server",
    default: () => [] as string[],
    parse: parseList,
  },
  natsDataDir: {
    env: "NATS_DATA_DIR",
    shown: "./data/nats",
    doc: "JetStream store of the embedded nats-server",
    default: () => "./data/nats",
    parse: trimmed,
  },
  natsStoreKeyFile: {
    env: "NATS_STORE_KEY_FILE",
    shown: "(unset)",
    doc: "File holding the key (16+ characters) that encrypts the embedded nats-server's JetStream store (file storage); passed through the server's environment, never its command line",
    default: () => "",
    parse: trimmed,
  },
  natsStoreCipher: {
    env: "NATS_STORE_CIPHER",
    shown: "chachapoly",
    doc: "Cipher of the encrypted store with NATS_STORE_KEY_FILE: chachapoly or aes (AES-GCM)",
    default: () => "chachapoly" as "chachapoly" | "aes",
    parse: oneOf("chachapoly", "aes"),
  },
  replayConnection: {
    env: "REPLAY_CONNECTION",
    shown: "own",
    doc: "Direct gets (replay, resume, history, live repairs): on a NATS connection of their own per worker, read without nats.js (own), or on the main one (shared)",
    default: () => "own" as "own" | "shared",
    parse: oneOf("own", "shared"),
  },
  natsServerBin: {
    env: "NATS_SERVER_BIN",
    shown: ".tools/bin/nats-server",
    doc: "nats-server binary for the embedded server",
    default: () => "",
    parse: trimmed,
  },
  redisUrl: {
    env: "REDIS_URL",
    shown: "(embedded)",
    doc: "Redis URL for --broker redis; unset starts an embedded redis-server",
    default: () => "",
    parse: trimmed,
  },
  redisServerBin: {
    env: "REDIS_SERVER_BIN",
    shown: "redis-server",
    doc: "redis-server binary for the embedded server (--broker redis without REDIS_URL)",
    default: () => "redis-server",
    parse: trimmed,
  },
  directGetQueue: {
    env: "DIRECT_GET_QUEUE",
    shown: "4096",
    doc: "Per worker: stored-message reads waiting for one of the 8 on the wire; beyond, a read fails at once with a temporary `broker_unavailable` (catch-ups retry; live-feed repairs always get in)",
    default: () => 4_096,
    parse: parseIntStrict,
    check: int(16, 1_000_000),
  },
} satisfies SettingTable;

export type BrokerValues = ValuesOf<typeof settings>;

export const broker = section({
  name: "broker",
  title: "The message broker, its servers and the embedded ones `npm start` runs",
  settings,
  slice: {
    kind: "broker",
    natsUrl: "natsUrl",
    natsSecurity: derive([], (c: NatsSecurityValues) => natsSecurity.build(c)),
    replayConnection: "replayConnection",
    natsDataDir: "natsDataDir",
    natsStoreKeyFile: "natsStoreKeyFile",
    natsStoreCipher: "natsStoreCipher",
    natsServerBin: "natsServerBin",
    redisUrl: "redisUrl",
    redisServerBin: "redisServerBin",
    directGetQueue: "directGetQueue",
  },
});

export type BrokerSection = SliceOf<typeof settings, typeof broker.slice>;
