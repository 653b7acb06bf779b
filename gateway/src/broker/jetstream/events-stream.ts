import type { Consumer, JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { AckPolicy, DeliverPolicy, DiscardPolicy, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { EventsSection } from "../../config/sections/index.js";
import type { Logger } from "../../log.js";
import { ensureOwnStream, type OwnStream } from "./own-stream.js";
import { atHome } from "./stream.js";
import type { EventSource, StoredEvent } from "../events.js";
import type { ReplayFrom } from "../broker.js";

/** The events stream as the gateway wants it: every kind under `<subject>.>`, kept for `maxAgeMs` and up to `maxBytes`, on `replicas` nodes. */
export function eventsStream(c: Pick<EventsSection, "stream" | "subject" | "maxAgeMs" | "maxBytes" | "replicas"> & { homeRegion?: string }): OwnStream {
  const wanted = {
    name: c.stream,
    subjects: [`${c.subject}.>`],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: nanos(c.maxAgeMs),
    max_bytes: c.maxBytes,
    num_replicas: c.replicas,
    // Regions: one stream for every region's gateways, in the home region (not compared: an existing one stays).
    ...atHome(c.homeRegion),
  };
  return { wanted, fields: ["subjects", "max_age", "max_bytes", "num_replicas"], what: "events stream", drift: "events_stream" };
}

/**
 * Creates the events stream, or brings an existing one's subjects, retention (age and bytes) and replicas to the settings
 * (no stored event is touched; a stream made with fewer replicas gains them, and they catch up).
 */
export async function ensureEventsStream(
  jsm: JetStreamManager,
  c: Pick<EventsSection, "stream" | "subject" | "maxAgeMs" | "maxBytes" | "replicas"> & { homeRegion?: string },
  log: Logger,
): Promise<void> {
  const s = eventsStream(c);
  await ensureOwnStream(jsm, s.wanted, s.fields, log, s.what);
}

/** The durable consumer every instance's webhook sender shares. */
export const WEBHOOK_DURABLE = "fanout-webhook";

/**
 * Points the webhook's durable consumer back at `from`: deleted and made again under the same name and
 * settings, starting there. The senders' next pull reads from the new position (a pull in progress fails
 * and is tried again); a batch being sent meanwhile may arrive again (delivery is at least once). Returns
 * how many events the consumer now has to send. A position past the stream's end is refused: events stored
 * until then would be skipped. Throws ConsumerNotFound when no webhook sender ever ran.
 */
export async function replayWebhook(jsm: JetStreamManager, stream: string, from: ReplayFrom): Promise<{ pending: number } | { refused: string }> {
  const info = await jsm.consumers.info(stream, WEBHOOK_DURABLE);
  const last = (await jsm.streams.info(stream)).state.last_seq;
  if ("fromId" in from && from.fromId > last + 1) return { refused: `fromId ${from.fromId} is past the last event (${last}): later events would be skipped` };
  if ("fromTime" in from && Date.parse(from.fromTime) > Date.now()) return { refused: "fromTime is in the future: events until then would be skipped" };
  const start =
    "fromId" in from
      ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from.fromId }
      : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: from.fromTime };
  await jsm.consumers.delete(stream, WEBHOOK_DURABLE);
  const { ack_policy, ack_wait, max_ack_pending } = info.config;
  const made = await jsm.consumers.add(stream, { durable_name: WEBHOOK_DURABLE, ack_policy, ack_wait, max_ack_pending, ...start });
  return { pending: made.num_pending };
}

/** Creates the webhook's durable consumer, or brings an existing one's ack wait and pending bound to the settings (its position is kept). */
export async function ensureWebhookConsumer(
  jsm: JetStreamManager,
  c: Pick<EventsSection, "stream">,
  o: { durable: string; maxAckPending: number; ackWaitMs: number },
): Promise<void> {
  const config = { ack_policy: AckPolicy.Explicit, ack_wait: nanos(o.ackWaitMs), max_ack_pending: o.maxAckPending, deliver_policy: DeliverPolicy.All };
  try {
    await jsm.consumers.info(c.stream, o.durable);
    await jsm.consumers.update(c.stream, o.durable, { ack_wait: config.ack_wait, max_ack_pending: config.max_ack_pending });
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.ConsumerNotFound)) throw e;
    await jsm.consumers.add(c.stream, { ...config, durable_name: o.durable });
  }
}

/**
 * The deployment's one reader of the events stream for the webhook: a durable pull consumer that every
 * instance shares, so each event is handed to one instance. At most `maxAckPending` events are out
 * unacknowledged at once; a reader that stops acknowledging and heartbeating (its instance died) has them
 * redelivered after ackWaitMs (events/webhook-timings.ts says who pulls them then).
 */
export async function webhookSource(
  js: JetStreamClient,
  jsm: JetStreamManager,
  c: Pick<EventsSection, "stream">,
  o: { durable: string; maxAckPending: number; ackWaitMs: number },
): Promise<EventSource> {
  await ensureWebhookConsumer(jsm, c, o);
  const consumer: Consumer = await js.consumers.get(c.stream, o.durable);
  return {
    async fetch(max, waitMs) {
      const out: StoredEvent[] = [];
      const msgs = await consumer.fetch({ max_messages: max, expires: Math.max(waitMs, 1_000) });
      for await (const m of msgs) out.push({ seq: m.seq, json: m.string(), working: () => m.working(), ack: () => m.ack(), nak: () => m.nak() });
      return out;
    },
    async firstSeq() {
      return (await jsm.streams.info(c.stream)).state.first_seq;
    },
    async outstanding() {
      return (await jsm.consumers.info(c.stream, o.durable)).num_ack_pending;
    },
    async lag() {
      const info = await jsm.consumers.info(c.stream, o.durable);
      const pending = info.num_pending + info.num_ack_pending;
      if (pending === 0) return { pending };
      // Everything below the ack floor is delivered: the oldest pending event is the first one above it.
      const oldest = await jsm.streams.getMessage(c.stream, { seq: info.ack_floor.stream_seq + 1 }).catch(() => null);
      return oldest ? { pending, oldestAt: oldest.time.getTime() } : { pending };
    },
  };
}
