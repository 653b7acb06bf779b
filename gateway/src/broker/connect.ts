import { livePrefixOf, type Config } from "../config/config.js";
import type { RepairReason } from "./jetstream-live.js";
import type { Logger } from "../log.js";
import type { Broker } from "./broker.js";
import { JetStreamBroker } from "./jetstream.js";

/** Connects the broker the config selects. */
export async function connectBroker(config: Config, log: Logger, name: string, hooks: { onRepair?: (why: RepairReason) => void } = {}): Promise<Broker> {
  if (config.broker === "redis") {
    const { RedisBroker } = await import("./redis.js");
    return RedisBroker.connect({ url: config.redisUrl, subjectPrefix: config.subjectPrefix, duplicateWindowMs: config.streamDuplicateWindow, log, name });
  }
  return JetStreamBroker.connect({ servers: config.natsUrl, stream: config.streamName, subjectPrefix: config.subjectPrefix, livePrefix: livePrefixOf(config), name, log,
    onRepair: hooks.onRepair,
    durable: { ackWaitMs: config.durableAckWaitMs, maxDeliver: config.durableMaxDeliver, inactiveMs: config.durableInactiveMs },
  });
}
