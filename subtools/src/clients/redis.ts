// A raw Redis SUBSCRIBE client (ioredis): the users' own pub/sub baseline, without the gateway.
import { Redis } from "ioredis";
import { ClientState, nowUs } from "../receiver.js";
import { backoffMs, errorReason, type ClientSetup, type SubClient } from "./types.js";

export class RedisClient implements SubClient {
  readonly state = new ClientState();
  private readonly redis: Redis;
  private stopping = false;
  private connectedOnce = false;

  constructor(private readonly setup: ClientSetup) {
    this.redis = new Redis({
      host: setup.host,
      port: setup.port,
      lazyConnect: true,
      enableReadyCheck: false,
      maxRetriesPerRequest: null,
      autoResubscribe: true,
      connectTimeout: 10_000,
      retryStrategy: (n) => (this.stopping ? null : backoffMs(n)),
    });
    this.redis.on("message", this.onMessage);
    this.redis.on("error", (err) => {
      if (!this.connectedOnce) {
        this.state.lastFailure = errorReason(err);
        this.setup.events.connectFailed(err, this.state.lastFailure);
      }
    });
    this.redis.on("close", () => {
      if (!this.state.subscribed) return;
      this.state.subscribed = false;
      this.setup.events.unsubscribed(this.state);
      if (!this.stopping) this.setup.events.reconnecting();
    });
    // ioredis resubscribes on its own after a reconnect; "ready" follows that.
    this.redis.on("ready", () => {
      if (this.connectedOnce && !this.state.subscribed && !this.stopping) this.markSubscribed();
    });
  }

  async start(): Promise<void> {
    try {
      await this.redis.connect();
      await this.redis.subscribe(...this.setup.channels);
      this.connectedOnce = true;
      this.markSubscribed();
    } catch (err) {
      // The retry strategy keeps trying; the first failure has been counted by the "error" listener.
      if (this.stopping) return;
      if (this.redis.status === "end") {
        this.state.lastFailure = errorReason(err);
        this.setup.events.connectFailed(err, this.state.lastFailure);
      }
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.redis.disconnect(false);
  }

  private markSubscribed(): void {
    this.state.subscribed = true;
    this.state.everSubscribed = true;
    this.setup.events.subscribed(this.state);
  }

  private readonly onMessage = (_channel: string, message: string): void => {
    this.setup.rx.payload(this.state, message, nowUs());
  };
}
