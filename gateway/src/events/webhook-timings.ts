import type { WebhookSection } from "../config/sections/index.js";

/**
 * How the webhook senders of a deployment share the work, from EVENTS_WEBHOOK_TAKEOVER (`takeoverMs`, L),
 * EVENTS_WEBHOOK_WAIT (w) and EVENTS_WEBHOOK_CONCURRENCY.
 *
 * Ordered (concurrency 1): one instance at a time holds the sender's lease (services/leader-lease.ts) and is
 * the only one that pulls from the durable consumer, so one batch is out in the whole deployment and batches
 * go in stream order. The holder renews the lease and sends `working` for its batch every `tickMs` (L/10); it
 * pulls, sends and heartbeats only while its last renewal was sent less than `holdMs` (3 ticks) ago. A holder
 * that dies leaves a lease that runs out L after its last renewal; by then the consumer has already put its
 * batch back (its last pull ended by `holdMs + w`, its last heartbeat by `holdMs`, and the ack wait is
 * `L - w - holdMs`), so the next holder's first pull gets that batch before anything later.
 *
 * Unordered (concurrency > 1): every instance pulls; a dead sender's batch goes to another after the ack
 * wait, L; a live one keeps its batches with heartbeats every tick.
 */
export type SenderTimings = Readonly<{ ordered: boolean; tickMs: number; holdMs: number; ackWaitMs: number; leaseMs: number }>;

export function senderTimings(c: Pick<WebhookSection, "takeoverMs" | "waitMs" | "concurrency">): SenderTimings {
  const tickMs = Math.max(100, Math.round(c.takeoverMs / 10));
  if (c.concurrency > 1) return { ordered: false, tickMs, holdMs: Infinity, ackWaitMs: c.takeoverMs, leaseMs: 0 };
  const holdMs = 3 * tickMs;
  return { ordered: true, tickMs, holdMs, ackWaitMs: c.takeoverMs - c.waitMs - holdMs, leaseMs: c.takeoverMs };
}
