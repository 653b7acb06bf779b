import type { JetStreamClient, JetStreamManager } from "@nats-io/jetstream";
import { DiscardPolicy, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { EventsSection } from "../../config/sections/index.js";
import type { Logger } from "../../log.js";
import { ensureOwnStream, type OwnStream } from "./own-stream.js";
import { atHome } from "./stream.js";
import type { LeaseStore } from "../broker.js";

/** The lease's stream and subject, beside the events stream: `<EVENTS_STREAM>_SENDER`, `<EVENTS_SUBJECT>-sender`. */
export const leaseNames = (c: Pick<EventsSection, "stream" | "subject">) => ({ stream: `${c.stream}_SENDER`, subject: `${c.subject}-sender` });

/** The lease's stream as the gateway wants it: one subject, one message, each expiring `leaseMs` after it was written. */
export function leaseStream(c: Pick<EventsSection, "stream" | "subject" | "replicas"> & { homeRegion?: string }, leaseMs: number): OwnStream {
  const { stream, subject } = leaseNames(c);
  const wanted = {
    name: stream,
    subjects: [subject],
    retention: RetentionPolicy.Limits,
    storage: StorageType.Memory,
    discard: DiscardPolicy.Old,
    max_msgs_per_subject: 1,
    max_age: nanos(leaseMs),
    num_replicas: c.replicas,
    ...atHome(c.homeRegion),
  };
  return { wanted, fields: ["max_age", "num_replicas"], what: "webhook lease stream", drift: "webhook_lease" };
}

/**
 * The webhook sender's lease in JetStream (services/leader-lease.ts): a stream of one subject that keeps one message
 * (in memory, on `replicas` nodes: STREAM_REPLICAS, so that losing one node does not stop the sender),
 * each expiring `leaseMs` after it was written, so a holder that stops renewing loses it by then. Writes
 * are conditional on the subject's last sequence (`Nats-Expected-Last-Subject-Sequence`), so of two
 * instances taking or renewing at once only one succeeds.
 */
export async function webhookLeaseStore(
  js: JetStreamClient,
  jsm: JetStreamManager,
  c: Pick<EventsSection, "stream" | "subject" | "replicas"> & { homeRegion?: string },
  leaseMs: number,
  log: Logger,
): Promise<LeaseStore> {
  const own = leaseStream(c, leaseMs);
  await ensureOwnStream(jsm, own.wanted, own.fields, log, own.what);
  const { stream, subject } = leaseNames(c);
  return {
    async read() {
      const m = await jsm.streams.getMessage(stream, { last_by_subj: subject });
      return m ? { seq: m.seq, holder: m.string() } : undefined;
    },
    async write(holder, after) {
      try {
        return (await js.publish(subject, holder, { expect: { lastSubjectSequence: after } })).seq;
      } catch (e) {
        if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamWrongLastSequence) return undefined;
        throw e;
      }
    },
  };
}
