import type { Logger } from "../log.js";
import { GatewayError } from "../errors.js";

/** Placeholder until the Redis baseline lands (issue 4). */
export class EmbeddedRedis {
  constructor(_opts: { log: Logger }) {}
  get url(): string {
    return "";
  }
  async start(): Promise<void> {
    throw new GatewayError("ERR_EMBEDDED_REDIS", "the redis broker is not built yet");
  }
  async stop(_timeoutMs?: number): Promise<void> {}
}
