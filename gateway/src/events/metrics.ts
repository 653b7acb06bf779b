import client from "prom-client";
import type { EventSource, WebhookLag } from "../broker/events.js";
import { SharedQuery } from "../util/shared-query.js";

/**
 * The webhook sender's lag and losses on the primary's registry: `fanout_webhook_pending` and
 * `fanout_webhook_oldest_pending_seconds`, read from the durable consumer when /metrics (or /v1/stats) is
 * scraped (two JetStream requests per scrape, nothing per event; a failed read keeps the last values);
 * `fanout_webhook_sending`, whether this instance sends now (holds the turn); and
 * `fanout_webhook_dropped_total`, events the stream's retention removed before the receiver took them.
 * Failed calls are `fanout_webhook_calls_total{result!="ok"}` (backend/metrics.ts).
 */
export function webhookMetrics(registry: client.Registry, source: Pick<EventSource, "lag">, sending: () => boolean) {
  let last: WebhookLag = { pending: 0 };
  const lag = new SharedQuery(async () => (last = await source.lag().catch(() => last)));
  new client.Gauge({
    name: "fanout_webhook_pending",
    help: "Events in the events stream the webhook has not delivered yet (waiting, or in a batch not yet answered 2xx); the same value on every instance",
    registers: [registry],
    async collect() {
      this.set((await lag.get()).pending);
    },
  });
  new client.Gauge({
    name: "fanout_webhook_oldest_pending_seconds",
    help: "Age of the oldest event the webhook has not delivered yet (0 when none): how far behind the receiver is",
    registers: [registry],
    async collect() {
      const { oldestAt } = await lag.get();
      this.set(oldestAt === undefined ? 0 : Math.max(0, (Date.now() - oldestAt) / 1000));
    },
  });
  new client.Gauge({
    name: "fanout_webhook_sending",
    help: "1 when this instance's webhook sender sends (holds the turn; with EVENTS_WEBHOOK_CONCURRENCY > 1 every instance does)",
    registers: [registry],
    collect() {
      this.set(sending() ? 1 : 0);
    },
  });
  const dropped = new client.Counter({
    name: "fanout_webhook_dropped_total",
    help: "Events the events stream dropped (EVENTS_MAX_AGE, EVENTS_MAX_BYTES) before the webhook receiver took them: lost to the webhook",
    registers: [registry],
  });
  return { dropped };
}

export type WebhookMetrics = ReturnType<typeof webhookMetrics>;
