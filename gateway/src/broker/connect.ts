import type { BrokerSection, DurableSection, PresenceSection, StreamSection } from "../config/sections.js";
import type { RepairReason } from "./jetstream-live.js";
import type { DirectVia } from "./direct-get.js";
import type { Logger } from "../log.js";
import type { Broker } from "./broker.js";
import { JetStreamBroker } from "./jetstream.js";

/** Connects the broker its section selects (the stream and durable sections say how it is used). */
export async function connectBroker(
  c: Readonly<{ broker: BrokerSection; stream: StreamSection; durable: DurableSection; presence?: PresenceSection }>,
  log: Logger,
  name: string,
  hooks: { onRepair?: (why: RepairReason) => void; onDirectGet?: (via: DirectVia) => void } = {},
): Promise<Broker> {
  if (c.broker.kind === "redis") {
    const { RedisBroker } = await import("./redis.js");
    return RedisBroker.connect({ url: c.broker.redisUrl, subjectPrefix: c.stream.subjectPrefix, duplicateWindowMs: c.stream.duplicateWindowMs, log, name });
  }
  return JetStreamBroker.connect({
    servers: c.broker.natsUrl,
    stream: c.stream.name,
    subjectPrefix: c.stream.subjectPrefix,
    livePrefix: c.stream.livePrefix,
    replayConnection: c.broker.replayConnection,
    name,
    log,
    onRepair: hooks.onRepair,
    onDirectGet: hooks.onDirectGet,
    presence: c.presence,
    durable: { ackWaitMs: c.durable.ackWaitMs, maxDeliver: c.durable.maxDeliver, inactiveMs: c.durable.inactiveMs, maxPerUser: c.durable.maxPerUser },
  });
}
