import type { BrokerSection } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import { EmbeddedNats } from "./embedded-nats.js";

/**
 * The broker URLs the workers use, and how to stop what was started for them; `natsToken`: the embedded
 * nats-server's token, which every NATS client of the gateway gives.
 */
export type EmbeddedBrokers = { natsUrl: string[]; redisUrl: string; natsToken?: string; stop(timeoutMs?: number): Promise<void> };

/**
 * Starts the broker the config asks for when no URL is given: an embedded nats-server for JetStream, an
 * embedded redis-server for the Redis baseline. Both are tied to the primary (stopped even if it is killed).
 */
export async function startEmbeddedBrokers(config: BrokerSection, log: Logger): Promise<EmbeddedBrokers> {
  if (config.kind === "jetstream") {
    if (config.natsUrl.length > 0) return { natsUrl: config.natsUrl, redisUrl: config.redisUrl, stop: async () => {} };
    const nats = new EmbeddedNats({
      bin: config.natsServerBin,
      dataDir: config.natsDataDir,
      log,
      storeKeyFile: config.natsStoreKeyFile,
      storeCipher: config.natsStoreCipher,
    });
    await nats.start();
    return { natsUrl: [nats.url], redisUrl: config.redisUrl, natsToken: nats.token, stop: (t?: number) => nats.stop(t) };
  }
  if (config.redisUrl) return { natsUrl: config.natsUrl, redisUrl: config.redisUrl, stop: async () => {} };
  const { EmbeddedRedis } = await import("./embedded-redis.js");
  const redis = new EmbeddedRedis({ bin: config.redisServerBin, log });
  await redis.start();
  return { natsUrl: config.natsUrl, redisUrl: redis.url, stop: (t?: number) => redis.stop(t) };
}
