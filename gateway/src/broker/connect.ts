import type { BrokerSection, DurableSection, PresenceSection, RegionLayout, StreamSection } from "../config/sections/index.js";
import type { RepairReason } from "./jetstream/live.js";
import type { DirectVia } from "./jetstream/direct/direct-get.js";
import type { Logger } from "../log.js";
import type { Broker } from "./broker.js";
import type { NamespacesSection } from "../namespaces/namespace.js";
import { JetStreamBroker } from "./jetstream/jetstream.js";
import { describeNatsSecurity, embeddedNatsSecurity, loadNatsSecurity } from "./jetstream/nats-security.js";

/** Connects the broker its section selects (the stream and durable sections say how it is used). */
export async function connectBroker(
  c: Readonly<{
    broker: BrokerSection;
    stream: StreamSection;
    durable: DurableSection;
    presence?: PresenceSection;
    namespaces?: NamespacesSection;
    regions?: RegionLayout;
  }>,
  log: Logger,
  name: string,
  hooks: {
    onRepair?: (why: RepairReason) => void;
    onDirectGet?: (via: DirectVia) => void;
    /** The embedded nats-server's token (given over IPC): it replaces the NATS credential settings, which it cannot have. */
    natsToken?: string;
  } = {},
): Promise<Broker> {
  if (c.broker.kind === "redis") {
    const { RedisBroker } = await import("./redis.js");
    return RedisBroker.connect({ url: c.broker.redisUrl, subjectPrefix: c.stream.subjectPrefix, duplicateWindowMs: c.stream.duplicateWindowMs, log, name });
  }
  // Read here, once per process; a bad file was already refused by the primary.
  const security = hooks.natsToken ? embeddedNatsSecurity(hooks.natsToken) : loadNatsSecurity(c.broker.natsSecurity);
  log.debug({ servers: c.broker.natsUrl, ...describeNatsSecurity(security) }, "connecting to NATS");
  return JetStreamBroker.connect({
    servers: c.broker.natsUrl,
    security,
    stream: c.stream.name,
    subjectPrefix: c.stream.subjectPrefix,
    livePrefix: c.stream.livePrefix,
    replayConnection: c.broker.replayConnection,
    name,
    log,
    onRepair: hooks.onRepair,
    onDirectGet: hooks.onDirectGet,
    directGetQueue: c.broker.directGetQueue,
    presence: c.presence,
    ...(c.namespaces && !c.namespaces.empty ? { namespaces: c.namespaces } : {}),
    // Outside the home region, reads are this region's mirrors' (broker/jetstream/regions.ts).
    ...(c.regions && c.regions.region !== c.regions.home ? { region: { name: c.regions.region, waitMs: c.regions.resumeWaitMs } } : {}),
    durable: { ackWaitMs: c.durable.ackWaitMs, maxDeliver: c.durable.maxDeliver, inactiveMs: c.durable.inactiveMs, maxPerUser: c.durable.maxPerUser },
  });
}
