import type { DurableApi, DurableDelivery, DurableSpec, Running } from "../broker/broker.js";
import type { Metrics } from "../metrics/metrics.js";
import type { FanoutSocket } from "./socket.js";

/**
 * One socket bound to a durable consumer. It holds the deliveries it sent and that are not settled yet;
 * when the socket goes away they are nak'ed at once, so the broker redelivers them (to another bound
 * socket, or to this client when it comes back) without waiting for ack_wait.
 */
export class DurableSub {
  readonly inflight = new Map<number, DurableDelivery>();
  /** The highest stream seq this socket was sent: a delivery at or below it is a repeat (see `onMessage`). */
  private highest = 0;
  private feed?: Running;
  private stopped = false;

  constructor(
    private readonly ws: FanoutSocket,
    readonly spec: DurableSpec,
    private readonly metrics: Metrics,
  ) {}

  async start(api: DurableApi): Promise<void> {
    this.feed = await api.bind(this.spec, (d) => this.onMessage(d));
    if (this.stopped) await this.feed.stop();
  }

  private onMessage(d: DurableDelivery): void {
    if (this.stopped || this.ws.closed) {
      d.nak();
      return;
    }
    this.inflight.set(d.seq, d);
    // JetStream's delivery count is one record of a repeat; this socket's own is the other. A consumer hands
    // out new messages in stream order, so one at or below the highest this socket was sent has been delivered
    // before (here or to a competing socket) even when the count says first: the consumer's record of that
    // delivery was lost (an R1 consumer's node killed right after it). `deliveries` is then at least 2.
    const again = d.redelivered || d.seq <= this.highest;
    if (d.seq > this.highest) this.highest = d.seq;
    const durable = again ? { name: this.spec.durable, redelivered: true, deliveries: Math.max(d.deliveries, 2) } : { name: this.spec.durable };
    this.ws.send(this.ws.codec.msg({ channel: d.channel, pattern: this.spec.pattern, seq: d.seq, ts: d.ts, type: d.type, durable }, d.payload));
    this.metrics.framesDelivered.inc();
  }

  /**
   * Settles one delivery, or (`inprogress`) restarts its ack_wait and keeps it held; false when this socket
   * does not hold `seq`.
   */
  settle(op: "ack" | "nak" | "term" | "inprogress", seq: number, delayMs?: number): boolean {
    const d = this.inflight.get(seq);
    if (!d) return false;
    if (op === "inprogress") {
      d.working();
      return true;
    }
    this.inflight.delete(seq);
    if (op === "ack") d.ack();
    else if (op === "nak") d.nak(delayMs);
    else d.term();
    return true;
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.feed?.stop();
    for (const d of this.inflight.values()) d.nak();
    this.inflight.clear();
  }
}
