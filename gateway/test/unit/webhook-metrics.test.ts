import client from "prom-client";
import { describe, expect, it } from "vitest";
import type { EventSource, StoredEvent } from "../../src/broker/events.js";
import type { BackendCaller } from "../../src/backend/caller.js";
import { createLogger } from "../../src/log.js";
import { webhookMetrics } from "../../src/events/metrics.js";
import { WebhookSender } from "../../src/events/webhook.js";
import { senderTimings } from "../../src/events/webhook-timings.js";

/** A stored event that records what the sender did with it. */
function stored(seq: number, done: string[]): StoredEvent {
  return { seq, json: '{"type":"connect"}', working: () => undefined, ack: () => done.push(`ack ${seq}`), nak: () => done.push(`nak ${seq}`) };
}

describe("events — the webhook sender's metrics", () => {
  it("events — fanout_webhook_pending is read from the source at each scrape; a failed read keeps the last value", async () => {
    const registry = new client.Registry();
    let answer: () => Promise<number> = () => Promise.resolve(42);
    webhookMetrics(registry, { lag: async () => ({ pending: await answer() }) }, () => false);
    expect(await registry.getSingleMetricAsString("fanout_webhook_pending")).toMatch(/^fanout_webhook_pending 42$/m);
    answer = () => Promise.resolve(3);
    expect(await registry.getSingleMetricAsString("fanout_webhook_pending")).toMatch(/^fanout_webhook_pending 3$/m);
    answer = () => Promise.reject(new Error("NATS down"));
    expect(await registry.getSingleMetricAsString("fanout_webhook_pending")).toMatch(/^fanout_webhook_pending 3$/m);
  });

  it("events — events the stream dropped while their batch was being retried count in fanout_webhook_dropped_total and are acknowledged", async () => {
    const registry = new client.Registry();
    const done: string[] = [];
    let fetched = false;
    const source: EventSource = {
      fetch: () => {
        if (fetched) return new Promise(() => undefined); // nothing more: the loop waits
        fetched = true;
        return Promise.resolve([stored(5, done), stored(6, done), stored(7, done)]);
      },
      firstSeq: () => Promise.resolve(7), // retention removed 5 and 6 after the first failed try
      outstanding: () => Promise.resolve(0),
      lag: () => Promise.resolve({ pending: 0 }),
    };
    let calls = 0;
    const caller = {
      post: () => Promise.resolve(++calls === 1 ? { ok: false, status: 503 } : { ok: true, status: 200 }),
      warn: () => undefined,
    } as unknown as BackendCaller;
    const metrics = webhookMetrics(registry, source, () => true);
    const config = { url: "http://x/e", batch: 10, waitMs: 1_000, backoffMaxMs: 100, concurrency: 4, takeoverMs: 5_000 };
    const sender = new WebhookSender(source, caller, config, senderTimings(config), createLogger("fatal", {}), metrics);
    sender.start();
    await expect.poll(() => done.length).toBe(3);
    void sender.stop();
    expect(done).toEqual(["ack 5", "ack 6", "ack 7"]);
    expect(await registry.getSingleMetricAsString("fanout_webhook_dropped_total")).toMatch(/^fanout_webhook_dropped_total 2$/m);
  });
});
