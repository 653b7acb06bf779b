import type { Metrics } from "../metrics/metrics.js";

/**
 * The live path's event-loop turns, for finding where delivery latency goes (issue 47): how many messages
 * the worker's live feeds handed over in one turn (the NATS or Redis reader's batch: every message of a read
 * chunk is delivered in the same turn), and how long from the first of them to the turn's check phase, where
 * uWS writes what was published to the sockets. One setImmediate per turn that carried messages, two
 * histogram observations; nothing per socket.
 */
export class TurnMeter {
  private messages = 0;
  private firstMs = 0;

  constructor(
    private readonly metrics: Pick<Metrics, "liveTurnMessages" | "liveTurnSeconds">,
    private readonly now: () => number = performance.now.bind(performance),
    private readonly later: (f: () => void) => void = setImmediate,
  ) {}

  /** A message handed to the hub in this turn. */
  message(): void {
    if (this.messages++ === 0) {
      this.firstMs = this.now();
      this.later(this.endTurn);
    }
  }

  private readonly endTurn = (): void => {
    this.metrics.liveTurnMessages.observe(this.messages);
    this.metrics.liveTurnSeconds.observe((this.now() - this.firstMs) / 1000);
    this.messages = 0;
  };
}
