// The chaos run's webhook receiver and its check: every gateway instance sends its events webhook to one
// real HTTP receiver (always up: the faults are on NATS and the gateways); at the end every event the events
// stream holds must have been accepted (lost: 0) and, per channel, first arrivals in stream order
// (out of order: 0). Repeats (a batch sent again after a take-over or a failed answer) are counted, not faults.
import type { JetStreamManager } from "@nats-io/jetstream";
import { waitFor } from "#testkit/wait.js";
import { WebhookReceiver } from "#testkit/webhook-receiver.js";
import { acceptedEvents, firstArrivals, missing, outOfOrder, type WebhookEvent } from "#testkit/webhook-events.js";
import type { LogLine } from "#testkit/gateway.js";
import type { FaultRecord } from "./faults.js";

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
  /** Distinct events accepted (also those stored while the check waited, past `expected`). */
  received: number;
  lost: number;
  outOfOrder: number;
  /** Accepted again after a first time (at-least-once), for information. */
  repeats: number;
  /** Instances that sent at least one accepted batch. */
  senders: number;
  /** The events counted in outOfOrder (first 20), each with the later event of its channel that arrived before it. */
  disorder: (WebhookEvent & { after: WebhookEvent })[];
  /** Ids accepted that lie past the stream's last sequence after the wait (the stream lost them), and the first's arrival. */
  pastEnd: number;
  pastEndFirstAt?: number;
  /** Ids accepted for two different events (the stream gave a sequence twice). */
  reused: number;
};

/** Ids accepted with two different events (type, time, client, channel), of `events`. */
export function reusedIds(events: readonly WebhookEvent[]): number[] {
  const seen = new Map<number, string>();
  const out = new Set<number>();
  for (const { sender: _s, at: _a, ...e } of events) {
    const body = JSON.stringify(e);
    const before = seen.get(e.id);
    if (before === undefined) seen.set(e.id, body);
    else if (before !== body) out.add(e.id);
  }
  return [...out];
}

export const startWebhookReceiver = (): Promise<WebhookReceiver> => WebhookReceiver.start();

/** Waits (up to `timeoutMs`) for every event the stream holds to be accepted, then counts. */
export async function checkWebhook(receiver: WebhookReceiver, jsm: JetStreamManager, timeoutMs: number): Promise<WebhookCheck> {
  const last = (await waitFor(() => jsm.streams.info(EVENTS_STREAM), { timeoutMs: 20_000, what: "events stream info" })).state.last_seq;
  await waitFor(() => missing(acceptedEvents(receiver), last).length === 0, { timeoutMs, what: "every event accepted by the webhook receiver" }).catch(
    () => undefined,
  );
  const events = acceptedEvents(receiver);
  const first = firstArrivals(events);
  const disorder = outOfOrder(events);
  // Events stored while this waited (subscribers leaving) arrive too: the stream's end is read again after.
  const end = (await jsm.streams.info(EVENTS_STREAM).catch(() => undefined))?.state.last_seq ?? last;
  const pastEnd = first.filter((e) => e.id > end);
  return {
    expected: last,
    received: first.length,
    lost: missing(events, last).length,
    outOfOrder: disorder.length,
    repeats: events.length - first.length,
    senders: new Set(events.map((e) => e.sender)).size,
    disorder: disorder.slice(0, 20),
    pastEnd: pastEnd.length,
    ...(pastEnd.length ? { pastEndFirstAt: Math.min(...pastEnd.map((e) => e.at)) } : {}),
    reused: reusedIds(events).length,
  };
}

/** One gateway instance's log lines (every process it had) and its primaries' pids, to name a webhook sender. */
export type InstanceLogs = { name: string; primaryPids: number[]; logs: LogLine[] };

/** An event webhook arrival as the report names it: id, channel, the instance that sent it, when (s into the run). */
export type ArrivalNamed = { id: number; channel: string; type: string; sender: string; atS: number };

/** An event that reached the webhook after a later one of its channel, with what was going on then. */
export type WebhookDisorder = ArrivalNamed & {
  /** The later event of its channel that arrived first. */
  after: ArrivalNamed;
  /** Faults running from 10 s before `after` arrived until this event arrived. */
  faults: string[];
  /** The gateways' webhook and lease log lines over that time. */
  logs: string[];
};

const senderName = (sender: string, instances: readonly InstanceLogs[]): string => {
  const pid = Number(sender.split("/").at(-1));
  return instances.find((i) => i.primaryPids.includes(pid))?.name ?? sender;
};

/** The report's account of each out-of-order webhook event: names, times (s after `t0`), the faults and logs around it. */
export function describeDisorder(
  bad: WebhookCheck["disorder"],
  faults: readonly FaultRecord[],
  instances: readonly InstanceLogs[],
  t0: number,
): WebhookDisorder[] {
  const named = (e: WebhookEvent): ArrivalNamed => ({
    id: e.id,
    channel: e.channel ?? "",
    type: e.type,
    sender: senderName(e.sender, instances),
    atS: Math.round((e.at - t0) / 100) / 10,
  });
  return bad.map((e) => {
    const [from, to] = [e.after.at - 10_000, e.at + 1_000];
    return {
      ...named(e),
      after: named(e.after),
      faults: faults
        .filter((f) => f.startedAt <= to && f.endedAt >= from)
        .map((f) => `#${f.index} ${f.kind} on ${f.target} (${((f.startedAt - t0) / 1000).toFixed(1)}–${((f.endedAt - t0) / 1000).toFixed(1)} s)`),
      logs: logsAround(instances, from, to, t0),
    };
  });
}

/** The gateways' log lines about the events stream, the webhook and its lease from `from` to `to` (ms), each with its time (s after `t0`). */
export function logsAround(instances: readonly InstanceLogs[], from: number, to: number, t0: number): string[] {
  return instances.flatMap((i) =>
    i.logs
      .filter((l) => /webhook|lease|events|stream/i.test(String(l.msg)))
      .map((l) => ({ l, at: Date.parse(String(l.time)) }))
      .filter(({ at }) => at >= from && at <= to)
      .map(
        ({ l, at }) =>
          `${((at - t0) / 1000).toFixed(1)} s ${i.name} pid ${String(l.pid)}: ${String(l.msg)} ${JSON.stringify({ ...l, msg: undefined, time: undefined, pid: undefined, level: undefined, hostname: undefined })}`,
      ),
  );
}
