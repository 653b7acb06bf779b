// Raw Redis PUBLISH: the users' baseline. The ack is Redis' reply (the number of receivers).
import { Redis } from "ioredis";
import type { Publisher, PublisherSetup } from "./types.js";

export class RedisPublisher implements Publisher {
  readonly acks = true;
  private readonly redis: Redis;

  constructor({ host, opts }: PublisherSetup) {
    this.redis = new Redis({ host, port: opts.port, lazyConnect: true, maxRetriesPerRequest: 1, commandTimeout: opts.timeoutMs });
    this.redis.on("error", () => undefined); // surfaced by the rejected publishes
  }

  async connect(): Promise<void> {
    await this.redis.connect();
  }

  async publish(channel: string, body: string): Promise<void> {
    await this.redis.publish(channel, body);
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
