// The chaos run's webhook receiver and its check: every gateway instance sends its events webhook to one
// real HTTP receiver (always up: the faults are on NATS and the gateways); at the end every event the events
// stream holds must have been accepted (lost: 0) and, per channel, first arrivals in stream order
// (out of order: 0). Repeats (a batch sent again after a take-over or a failed answer) are counted, not faults.
import type { JetStreamManager } from "@nats-io/jetstream";
import { waitFor } from "#testkit/wait.js";
import { WebhookReceiver } from "#testkit/webhook-receiver.js";
import { acceptedEvents, firstArrivals, missing, outOfOrder } from "#testkit/webhook-events.js";

export const EVENTS_STREAM = "FANOUT_EVENTS";

/** What the gateways need to send to the receiver (their env). */
export const webhookEnv = (url: string): Record<string, string> => ({
  EVENTS_WEBHOOK_URL: url,
  EVENTS_WEBHOOK_BACKOFF_MAX: "2s",
  EVENTS_WEBHOOK_TIMEOUT: "5s",
});

export type WebhookCheck = {
  /** Events in the events stream at the end. */
  expected: number;
  /** Distinct events accepted. */
  received: number;
  lost: number;
  outOfOrder: number;
  /** Accepted again after a first time (at-least-once), for information. */
  repeats: number;
  /** Instances that sent at least one accepted batch. */
  senders: number;
};

export const startWebhookReceiver = (): Promise<WebhookReceiver> => WebhookReceiver.start();

/** Waits (up to `timeoutMs`) for every event the stream holds to be accepted, then counts. */
export async function checkWebhook(receiver: WebhookReceiver, jsm: JetStreamManager, timeoutMs: number): Promise<WebhookCheck> {
  const last = (await waitFor(() => jsm.streams.info(EVENTS_STREAM), { timeoutMs: 20_000, what: "events stream info" })).state.last_seq;
  await waitFor(() => missing(acceptedEvents(receiver), last).length === 0, { timeoutMs, what: "every event accepted by the webhook receiver" }).catch(
    () => undefined,
  );
  const events = acceptedEvents(receiver);
  const first = firstArrivals(events);
  return {
    expected: last,
    received: first.length,
    lost: missing(events, last).length,
    outOfOrder: outOfOrder(events).length,
    repeats: events.length - first.length,
    senders: new Set(events.map((e) => e.sender)).size,
  };
}
