// Core NATS (subject = channel, no acks) and JetStream (subject = <prefix><channel>, the gateway's
// stream (FANOUT_CHANNELS by default) reads ev.<channel>; the ack is the stream's PubAck).
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamClient } from "@nats-io/jetstream";
import type { Publisher, PublisherSetup } from "./types.js";

export class NatsPublisher implements Publisher {
  readonly acks: boolean = false;
  protected nc: NatsConnection | null = null;

  constructor(protected readonly setup: PublisherSetup) {}

  async connect(): Promise<void> {
    // noAsyncTraces: no two stack-traced Error objects per JetStream publish request (the load tool stays cheap).
    this.nc = await connect({
      servers: `${this.setup.host}:${this.setup.opts.port}`,
      name: "pub-cluster",
      timeout: this.setup.opts.timeoutMs,
      noAsyncTraces: true,
    });
  }

  async publish(channel: string, body: string, _msgId?: string): Promise<void> {
    this.nc!.publish(channel, body);
    if (this.setup.opts.sync) await this.nc!.flush();
  }

  async flush(): Promise<void> {
    await this.nc?.flush();
  }

  async close(): Promise<void> {
    await this.nc?.drain().catch(() => this.nc?.close());
  }
}

export class JetStreamPublisher extends NatsPublisher {
  override readonly acks: boolean = true;
  private js: JetStreamClient | null = null;

  override async connect(): Promise<void> {
    await super.connect();
    this.js = jetstream(this.nc!, { timeout: this.setup.opts.timeoutMs });
  }

  override async publish(channel: string, body: string, msgId: string | undefined): Promise<void> {
    await this.js!.publish(this.setup.opts.subjectPrefix + channel, body, msgId ? { msgID: msgId } : undefined);
  }
}
