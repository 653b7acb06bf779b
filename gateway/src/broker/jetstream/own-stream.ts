import type { JetStreamManager, StreamConfig } from "@nats-io/jetstream";
import { JetStreamApiCodes, JetStreamApiError } from "@nats-io/jetstream";
import type { StreamDiff } from "./stream.js";

/** What ensureOwnStream did: made the stream, updated the fields listed, or nothing (`diff` empty). */
export type OwnStreamResult = { created: boolean; diff: StreamDiff };

/**
 * Creates a stream whose whole content is the gateway's own bookkeeping (the events stream, the webhook's
 * lease, the cluster's state bucket), or brings the `fields` of an existing one to `wanted` by a stream
 * update; every other field of it is left as it is. No stored message is touched: a changed `num_replicas`
 * makes the server add replicas (they catch up from the stream's leader) or drop some. Unlike the channels'
 * stream (UPDATE_STREAM), this needs no switch: nothing an operator stores there is changed.
 */
export async function ensureOwnStream(
  jsm: JetStreamManager,
  wanted: Partial<StreamConfig> & { name: string },
  fields: readonly (keyof StreamConfig)[],
): Promise<OwnStreamResult> {
  let existing: StreamConfig;
  try {
    existing = (await jsm.streams.info(wanted.name)).config;
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound)) throw e;
    await jsm.streams.add(wanted);
    return { created: true, diff: [] };
  }
  const diff = fields
    .filter((f) => JSON.stringify(existing[f]) !== JSON.stringify(wanted[f]))
    .map((f) => ({ field: f, existing: existing[f], wanted: wanted[f] }));
  if (diff.length > 0) await jsm.streams.update(wanted.name, { ...existing, ...Object.fromEntries(diff.map((d) => [d.field, d.wanted])) });
  return { created: false, diff };
}
