import type { JetStreamManager, Placement, StreamConfig, StreamInfo } from "@nats-io/jetstream";
import { DiscardPolicy, JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { nanos, PermissionViolationError, RequestError } from "@nats-io/transport-node";
import type { StreamSection } from "../../config/sections/index.js";
import { ProcessError } from "../../errors.js";
import type { Logger } from "../../log.js";

/** The stream the gateway wants, from config: one stream, subjects `<prefix>.>`. */
export function desiredStream(c: StreamSection): Partial<StreamConfig> & { name: string } {
  return {
    name: c.name,
    subjects: [`${c.subjectPrefix}.>`],
    storage: c.storage === "memory" ? StorageType.Memory : StorageType.File,
    num_replicas: c.replicas,
    max_age: nanos(c.maxAgeMs),
    max_msgs_per_subject: c.maxMsgsPerSubject,
    max_bytes: c.maxBytes,
    duplicate_window: nanos(c.duplicateWindowMs),
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    allow_direct: true,
    max_consumers: c.maxConsumers,
    // Live delivery: every stored message is also published on core NATS with its sequence headers (with
    // regions, under the home region's prefix: the other regions' gateways read their mirrors' republish).
    republish: { src: `${c.subjectPrefix}.>`, dest: `${c.homeLivePrefix}.>` },
    // Regions: the stream lives in the home region's cluster (regions.ts places its mirrors).
    ...(c.homeRegion !== undefined ? { placement: inCluster(c.homeRegion) } : {}),
    // Per-message TTL (Nats-TTL): only when asked for, so that a stream without it compares equal.
    ...(c.allowMsgTtl ? { allow_msg_ttl: true } : {}),
  };
}

/** Placement in a cluster (a region), as nats-server gives it back: without tags (its type wants them). */
export const inCluster = (cluster: string): Placement => ({ cluster }) as Placement;

/** Regions: `placement` in the home region for a stream made there; nothing without regions. */
export const atHome = (homeRegion: string | undefined): { placement?: Placement } => (homeRegion !== undefined ? { placement: inCluster(homeRegion) } : {});

const COMPARED = [
  "subjects",
  "storage",
  "num_replicas",
  "max_age",
  "max_msgs_per_subject",
  "max_bytes",
  "duplicate_window",
  "retention",
  "discard",
  "allow_direct",
  "max_consumers",
  "republish",
  "allow_msg_ttl",
  "placement",
] as const;

/** Differences the gateway applies to an existing stream by itself: they change no stored message. */
const SAFE = new Set<string>(["allow_direct", "max_consumers"]);

export type StreamDiff = { field: string; existing: unknown; wanted: unknown }[];

export function diffStream(existing: StreamConfig, wanted: Partial<StreamConfig>): StreamDiff {
  const out: StreamDiff = [];
  for (const f of COMPARED) {
    const a = existing[f];
    const b = wanted[f];
    if (b !== undefined && JSON.stringify(a) !== JSON.stringify(b)) out.push({ field: f, existing: a, wanted: b });
  }
  return out;
}

/** nats-server's JSClusterNoPeersErrF (a 400): no peers to place a replicated stream on, as while a node restarts. */
const JS_CLUSTER_NO_PEERS = 10005;

/**
 * Runs a stream set-up step again while the failure may pass — a request timing out or JetStream answering
 * 5xx while the cluster elects a stream or meta leader (a gateway started during a NATS node's restart), or
 * no peers to place a new replicated stream on (a node restarting, a cluster just formed) — with doubling
 * delays up to 5 s, `attempts` times in all. Another refusal (4xx), a config mismatch or a permissions
 * violation (the user may not send the request: no election changes that) is final.
 */
export async function whileElecting<T>(what: string, log: Logger, step: () => Promise<T>, attempts = 8, baseDelayMs = 500): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (e) {
      const final =
        e instanceof ProcessError ||
        (e instanceof RequestError && e.cause instanceof PermissionViolationError) ||
        (e instanceof JetStreamApiError && e.status >= 400 && e.status < 500 && e.code !== JS_CLUSTER_NO_PEERS);
      if (final || attempt >= attempts) throw e;
      const retryInMs = Math.min(baseDelayMs * 2 ** (attempt - 1), 5_000);
      log.warn({ err: e, what, attempt, retryInMs }, `${what}: JetStream did not answer (a leader election?); retrying`);
      await new Promise((r) => setTimeout(r, retryInMs));
    }
  }
}

/**
 * Creates the stream, or checks an existing one. A differing stream is updated only with `--update-stream`;
 * otherwise the difference is logged and startup fails with ERR_STREAM_MISMATCH.
 */
export async function ensureStream(jsm: JetStreamManager, c: StreamSection, log: Logger): Promise<StreamInfo> {
  const wanted = desiredStream(c);
  let info: StreamInfo | undefined;
  try {
    info = await jsm.streams.info(wanted.name);
  } catch (e) {
    if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound)) throw e;
  }
  if (!info) {
    const created = await jsm.streams.add(wanted);
    const retention = { maxAgeMs: c.maxAgeMs, maxBytes: c.maxBytes, maxMsgsPerSubject: c.maxMsgsPerSubject, duplicateWindowMs: c.duplicateWindowMs };
    log.info({ stream: wanted.name, subjects: wanted.subjects, storage: c.storage, replicas: c.replicas, ...retention }, "stream created");
    return created;
  }
  const diff = diffStream(info.config, wanted);
  if (diff.length === 0) return info;
  // A stream created before live delivery went consumer-free has no republish rule: adding it (and the
  // consumer limit) leaves every stored message as it is, so it is done without --update-stream.
  const safe = diff.every((d) => SAFE.has(d.field) || (d.field === "republish" && !info.config.republish));
  if (safe && !c.update) {
    const updated = await jsm.streams.update(wanted.name, { ...info.config, ...wanted });
    log.warn({ stream: wanted.name, diff }, "stream updated for consumer-free live delivery (republish rule, consumer limit); stored messages are unchanged");
    return updated;
  }
  if (!c.update) {
    log.error({ stream: wanted.name, diff }, "existing stream config differs from the gateway's settings; start with --update-stream to apply them");
    throw new ProcessError("ERR_STREAM_MISMATCH", `stream ${wanted.name} differs in ${diff.map((d) => d.field).join(", ")} (use --update-stream)`);
  }
  const updated = await jsm.streams.update(wanted.name, { ...info.config, ...wanted });
  log.warn({ stream: wanted.name, diff }, "stream config updated");
  return updated;
}
