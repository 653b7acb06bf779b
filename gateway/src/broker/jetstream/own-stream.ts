import type { JetStreamManager, StreamConfig } from "@nats-io/jetstream";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { Logger } from "../../log.js";

/** How long ensureOwnStream waits for the replicas a change of num_replicas adds to catch up, and how often it looks. */
const SETTLE_TIMEOUT_MS = 30_000;
const SETTLE_POLL_MS = 100;

/**
 * A stream of the gateway's own bookkeeping as the gateway wants it: its settings, the `fields` of them kept
 * to the settings (the others are the operator's), what the logs call it, and the name of it in the stream
 * watch's drift kinds (`<drift>_missing`, `<drift>_changed`: stream-watch.ts).
 */
export type OwnStream = {
  wanted: Partial<StreamConfig> & { name: string };
  fields: readonly (keyof StreamConfig)[];
  what: string;
  drift: "events_stream" | "webhook_lease" | "state_bucket" | "region_mirror";
  /** What stands on the stream and goes with it (the webhook's durable consumer): made again after the stream is. */
  restore?: () => Promise<void>;
};

/** How an own stream `existing` (undefined: not found) differs from the gateway's; pure. */
export function ownStreamDrift(existing: StreamConfig | undefined, o: OwnStream): `${OwnStream["drift"]}_${"missing" | "changed"}`[] {
  if (!existing) return [`${o.drift}_missing`];
  return o.fields.some((f) => JSON.stringify(existing[f]) !== JSON.stringify(o.wanted[f])) ? [`${o.drift}_changed`] : [];
}

/**
 * Creates a stream whose whole content is the gateway's own bookkeeping (the events stream, the webhook's
 * lease, the cluster's state bucket, the presence bucket), or brings the `fields` of an existing one to `wanted` by a stream
 * update; every other field of it is left as it is. No stored message is touched: a changed `num_replicas`
 * makes the server add replicas (they catch up from the stream's leader) or drop some. Unlike the channels'
 * stream (UPDATE_STREAM), this needs no switch: nothing an operator stores there is changed.
 *
 * While the server moves a stream to another number of replicas it answers no write for a moment (measured on
 * the 3-node test cluster: the first publish after an R1 to R3 update was never acknowledged; after about
 * 0.9 s, once the stream had a leader and its followers were current, writes were). So after such an update
 * this waits, up to SETTLE_TIMEOUT_MS, until the stream has a leader and every follower is current.
 * Logs `<what> created`, `<what> updated` (with what differed), and a warning when the wait ran out.
 */
export async function ensureOwnStream(
  jsm: JetStreamManager,
  wanted: Partial<StreamConfig> & { name: string },
  fields: readonly (keyof StreamConfig)[],
  log: Logger,
  what: string,
): Promise<void> {
  let existing: StreamConfig;
  try {
    existing = (await jsm.streams.info(wanted.name)).config;
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound)) throw e;
    await jsm.streams.add(wanted);
    log.info({ stream: wanted.name, subjects: wanted.subjects, replicas: wanted.num_replicas ?? 1 }, `${what} created`);
    return;
  }
  const diff = fields
    .filter((f) => JSON.stringify(existing[f]) !== JSON.stringify(wanted[f]))
    .map((f) => ({ field: f, existing: existing[f], wanted: wanted[f] }));
  if (diff.length === 0) return;
  await jsm.streams.update(wanted.name, { ...existing, ...Object.fromEntries(diff.map((d) => [d.field, d.wanted])) });
  log.info({ stream: wanted.name, diff }, `${what} updated`);
  if (diff.some((d) => d.field === "num_replicas") && !(await replicasSettled(jsm, wanted.name, wanted.num_replicas ?? 1)))
    log.warn({ stream: wanted.name, waitedMs: SETTLE_TIMEOUT_MS }, `${what}: its new replicas are not caught up yet; writes to it may fail until they are`);
}

/** Whether the stream, within SETTLE_TIMEOUT_MS, has a leader and `replicas - 1` followers, all current. */
async function replicasSettled(jsm: JetStreamManager, name: string, replicas: number): Promise<boolean> {
  const deadline = performance.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    const c = (await jsm.streams.info(name)).cluster;
    const followers = c?.replicas ?? [];
    if (c?.leader && followers.length === replicas - 1 && followers.every((r) => r.current)) return true;
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, SETTLE_POLL_MS));
  }
}
