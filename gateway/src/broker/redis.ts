import type { Logger } from "../log.js";
import type { Broker, BrokerEvent, BrokerMessage, LiveFeed, PublishResult } from "./broker.js";
import { GatewayError } from "../errors.js";

/** Placeholder until the Redis baseline lands (issue 4); selecting it fails clearly at startup. */
export class RedisBroker {
  static async connect(_opts: { url: string; log: Logger; name: string }): Promise<Broker> {
    throw new GatewayError("ERR_BROKER_UNAVAILABLE", "the redis broker is not built yet");
  }
}
export type { BrokerEvent, BrokerMessage, LiveFeed, PublishResult };
