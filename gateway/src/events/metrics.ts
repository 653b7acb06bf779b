import client from "prom-client";
import type { EventSource } from "../broker/jetstream/events-stream.js";

/**
 * The webhook sender's lag and losses on the primary's registry: `fanout_webhook_pending`, read from the
 * durable consumer when /metrics is scraped (one JetStream request per scrape, nothing per event; a failed
 * read keeps the last value), and `fanout_webhook_dropped_total`, events the stream's retention removed
 * before the receiver took them. Failed calls are `fanout_webhook_calls_total{result!="ok"}` (backend/metrics.ts).
 */
export function webhookMetrics(registry: client.Registry, source: Pick<EventSource, "pending">) {
  let last = 0;
  new client.Gauge({
    name: "fanout_webhook_pending",
    help: "Events in the events stream the webhook has not delivered yet (waiting, or in a batch not yet answered 2xx); the same value on every instance",
    registers: [registry],
    async collect() {
      last = await source.pending().catch(() => last);
      this.set(last);
    },
  });
  const dropped = new client.Counter({
    name: "fanout_webhook_dropped_total",
    help: "Events the events stream dropped (EVENTS_MAX_AGE) before the webhook receiver took them: lost to the webhook",
    registers: [registry],
  });
  return { dropped };
}

export type WebhookMetrics = ReturnType<typeof webhookMetrics>;
