import type { Broker } from "../broker/broker.js";
import type { EventsSection } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import type { NamespacesSection } from "../namespaces/namespace.js";
import { InFlight } from "../util/in-flight.js";
import { EventRecorder } from "./recorder.js";
import { ShareTally } from "./tally.js";

/** A worker's part of EVENTS: its recorder, and the drain's wait for what it stored. */
export type WorkerEvents = {
  /** The recorder of connection and subscription events, when EVENTS turns any kind on (JetStream only: a start check). */
  readonly recorder?: EventRecorder;
  /**
   * Waits up to `ms` for the acknowledgements of the events being stored (a drain does, before it closes the
   * NATS connection, which would cut them on their way); warns when some are still out.
   */
  settled(ms: number): Promise<void>;
};

/**
 * Starts a worker's events. `share`: where the worker's channels and users go (its primary, which keeps the
 * instance's share in the cluster's state; events/tally.ts).
 */
export function startWorkerEvents(
  c: EventsSection,
  deps: { broker: Broker; log: Logger; namespaces: NamespacesSection; share: (key: string, held: boolean) => void },
): WorkerEvents {
  const { broker, log } = deps;
  const storing = new InFlight();
  const appendEvent = broker.appendEvent?.bind(broker);
  const append = appendEvent ? (subject: string, json: string) => storing.track(appendEvent(subject, json)) : undefined;
  const tally = new ShareTally(deps.share);
  const recorder = c.kinds.length > 0 && append ? new EventRecorder(c, append, log, undefined, deps.namespaces, tally) : undefined;
  return {
    recorder,
    async settled(ms) {
      if (!(await storing.settled(ms))) log.warn({ events: storing.size, waitedMs: ms }, "events still unacknowledged at the drain's bound");
    },
  };
}
