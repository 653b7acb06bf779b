// What a backend sees of the events webhook, for the tests that check its promises: the events of the
// requests it answered 2xx, each with the instance that sent it, and the checks (every stored event
// arrived, per channel in stream order, each sent by one instance).
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import type { WebhookReceiver } from "./webhook-receiver.js";

export type WebhookEvent = { id: number; type: string; client: string; channel?: string; sender: string; at: number };

/** Every event of every accepted request, in arrival order (a repeat appears each time it was accepted). */
export function acceptedEvents(receiver: WebhookReceiver): WebhookEvent[] {
  return receiver.requests
    .filter((r) => r.status >= 200 && r.status < 300)
    .flatMap((r) => (JSON.parse(r.body) as { events: Omit<WebhookEvent, "sender" | "at">[] }).events.map((e) => ({ ...e, sender: r.sender, at: r.at })));
}

/** The first arrival of each id, in arrival order. */
export function firstArrivals(events: readonly WebhookEvent[]): WebhookEvent[] {
  const seen = new Set<number>();
  return events.filter((e) => !seen.has(e.id) && seen.add(e.id));
}

/**
 * Events that arrived (first time) after a later event of their channel, each with `after`, the latest event of
 * its channel that had arrived before it: none when every channel is in stream order.
 */
export function outOfOrder(events: readonly WebhookEvent[]): (WebhookEvent & { after: WebhookEvent })[] {
  const last = new Map<string, WebhookEvent>();
  const bad: (WebhookEvent & { after: WebhookEvent })[] = [];
  for (const e of firstArrivals(events)) {
    if (e.channel === undefined) continue;
    const after = last.get(e.channel);
    if (after && after.id > e.id) bad.push({ ...e, after });
    else last.set(e.channel, e);
  }
  return bad;
}

/** Ids accepted from more than one instance. */
export function sentByTwo(events: readonly WebhookEvent[]): number[] {
  const by = new Map<number, Set<string>>();
  for (const e of events) by.set(e.id, (by.get(e.id) ?? new Set()).add(e.sender));
  return [...by].filter(([, s]) => s.size > 1).map(([id]) => id);
}

/** The events stream's sequences so far: first and last (an empty stream: last 0). */
export async function streamSeqs(natsUrl: string, stream = "FANOUT_EVENTS"): Promise<{ first: number; last: number }> {
  const nc = await connect({ servers: natsUrl });
  try {
    const s = (await (await jetstreamManager(nc)).streams.info(stream)).state;
    return { first: s.first_seq, last: s.last_seq };
  } finally {
    await nc.close();
  }
}

/** Ids from 1 to `last` that never arrived. */
export function missing(events: readonly WebhookEvent[], last: number): number[] {
  const got = new Set(events.map((e) => e.id));
  return Array.from({ length: last }, (_, i) => i + 1).filter((id) => !got.has(id));
}
