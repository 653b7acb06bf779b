import type { PubOptions } from "../options.js";

/** One publishing connection, whatever the target. */
export interface Publisher {
  /** The target acknowledges each publish (core NATS does not: its latency is not reported). */
  readonly acks: boolean;
  connect(): Promise<void>;
  /** Resolves on the target's ack; rejects on error, refusal or timeout. `body` is the JSON payload. */
  publish(channel: string, body: string, msgId: string | undefined): Promise<void>;
  /** Makes sure everything sent so far reached the target (core NATS: a flush). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export type PublisherSetup = { host: string; opts: PubOptions };

export class PublishError extends Error {
  override readonly name = "PublishError";
  constructor(
    message: string,
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
