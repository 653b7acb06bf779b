import type { NatsConnection } from "@nats-io/transport-node";
import { jetstream, type JetStreamManager } from "@nats-io/jetstream";
import type { EventsSection } from "../../config/sections/index.js";
import type { Logger } from "../../log.js";
import type { EventsBroker } from "../events.js";
import { ensureEventsStream, ensureWebhookConsumer, eventsStream, WEBHOOK_DURABLE, webhookSource } from "./events-stream.js";
import type { OwnStream } from "./own-stream.js";
import { ensureSharedState, JetStreamSharedState, sharedStateBucket } from "./shared-state.js";
import { whileElecting } from "./stream.js";
import { leaseStream, webhookLeaseStore } from "./webhook-lease.js";

/** The events broker in JetStream, and the streams it made: the primary's stream watch keeps them from then on. */
export type JetStreamEventsBroker = EventsBroker & {
  /** The gateway's own streams this broker made or brought to the settings so far (the events stream, the lease's, the state bucket). */
  owned(): readonly OwnStream[];
};

/**
 * The events feature's broker (broker/events.ts) on the primary's NATS connection: the events stream and
 * the webhook's consumer (events-stream.ts), the webhook sender's lease (webhook-lease.ts) and the cluster's
 * shared state (shared-state.ts), each made or brought to the settings `c` (EVENTS_*) when first asked for.
 */
export function jetStreamEventsBroker(nc: NatsConnection, jsm: JetStreamManager, c: EventsSection, log: Logger): JetStreamEventsBroker {
  const js = jetstream(nc);
  const owned = new Map<string, OwnStream>();
  const keep = (o: OwnStream): void => void owned.set(o.wanted.name, o);
  return {
    owned: () => [...owned.values()],
    async ensureStream() {
      await whileElecting(`stream ${c.stream}`, log, () => ensureEventsStream(jsm, c, log));
      keep(eventsStream(c));
    },
    async webhookSource(o) {
      const consumer = { durable: WEBHOOK_DURABLE, ...o };
      const source = await webhookSource(js, jsm, c, consumer);
      // A deleted events stream takes the consumer with it: the stream watch makes both again, and the senders' next pulls read the new one.
      keep({ ...eventsStream(c), restore: () => ensureWebhookConsumer(jsm, c, consumer) });
      return source;
    },
    async webhookLease(leaseMs) {
      const store = await whileElecting("webhook lease stream", log, () => webhookLeaseStore(js, jsm, c, leaseMs, log));
      keep(leaseStream(c, leaseMs));
      return store;
    },
    async sharedState(s) {
      await ensureSharedState(jsm, s, log);
      keep(sharedStateBucket(s));
      return new JetStreamSharedState(js, jsm, s);
    },
    appendEvent: async (subject, json, msgID) => (await js.publish(subject, json, msgID ? { msgID } : {})).seq,
  };
}
