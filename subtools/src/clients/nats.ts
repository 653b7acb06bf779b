// A core NATS subscriber (subject = channel), one connection per client like the other targets.
import { connect, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { ClientState, nowUs } from "../receiver.js";
import { backoffMs, errorReason, type ClientSetup, type SubClient } from "./types.js";

export class NatsClient implements SubClient {
  readonly state = new ClientState();
  private nc: NatsConnection | null = null;
  private stopping = false;
  private retryTimer: NodeJS.Timeout | null = null;

  constructor(private readonly setup: ClientSetup) {}

  start(): Promise<void> {
    return this.attempt(0);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const nc = this.nc;
    this.nc = null;
    if (nc) await nc.close().catch(() => undefined);
  }

  private async attempt(n: number): Promise<void> {
    this.retryTimer = null;
    if (this.stopping) return;
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: `${this.setup.host}:${this.setup.port}`,
        name: "sub-cluster",
        reconnect: true,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 250,
        timeout: 10_000,
      });
    } catch (err) {
      this.state.lastFailure = errorReason(err);
      this.setup.events.connectFailed(err, this.state.lastFailure);
      if (!this.stopping) this.retryTimer = setTimeout(() => void this.attempt(n + 1), backoffMs(n));
      return;
    }
    if (this.stopping) {
      await nc.close();
      return;
    }
    this.nc = nc;
    for (const subject of this.setup.channels) nc.subscribe(subject, { callback: this.onMessage });
    await nc.flush();
    this.setSubscribed(true);
    void this.watch(nc);
  }

  private async watch(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") {
        this.setSubscribed(false);
        if (!this.stopping) this.setup.events.reconnecting();
      } else if (s.type === "reconnect") this.setSubscribed(true);
    }
    this.setSubscribed(false);
  }

  private setSubscribed(on: boolean): void {
    if (on === this.state.subscribed) return;
    this.state.subscribed = on;
    if (on) {
      this.state.everSubscribed = true;
      this.setup.events.subscribed(this.state);
    } else this.setup.events.unsubscribed(this.state);
  }

  private readonly onMessage = (err: Error | null, msg: Msg): void => {
    if (err) return;
    this.setup.rx.payload(this.state, msg.string(), nowUs());
  };
}
