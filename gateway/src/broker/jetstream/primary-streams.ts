import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import type { PresenceSection, RegionLayout, StreamSection } from "../../config/sections/index.js";
import type { Logger } from "../../log.js";
import { guarded } from "../../util/guarded.js";
import { describeNatsSecurity, natsJsOptions, type NatsSecurity } from "./nats-security.js";
import { ensurePresenceBucket, presenceStream } from "./presence.js";
import { ensureStream, whileElecting } from "./stream.js";
import { StreamWatch, type StreamWatchOptions } from "./stream-watch.js";
import { ensureOwnStream, type OwnStream } from "./own-stream.js";
import { regionMirrors } from "./regions.js";

/**
 * The primary's side of JetStream: its connection (`connectPrimary`), the channel streams (the default one and
 * each namespace's) and the presence bucket made or checked at start (`prepareStreams`), then watched (`watch`)
 * until `close`. Between the two, the primary settles the channel stream's name (stream-name.ts).
 */
export type PrimaryStreams = {
  readonly nc: NatsConnection;
  readonly jsm: JetStreamManager;
  /**
   * Starts the StreamWatch over the streams, the region's mirrors of them, the bucket and `own` (another
   * feature's streams), and looks again at JetStream's update and delete advisories.
   */
  watch(o: StreamWatchOptions): void;
  /** Regions: how many messages this region's mirror of each stream knows it is behind its origin (none in the home region). */
  mirrorLag(): Promise<{ stream: string; lag: number }[]>;
  /** Stops the watch and closes the connection. */
  close(): Promise<void>;
};

/** The primary's NATS connection and JetStream manager, open before any stream is made. */
export type PrimaryNats = { readonly nc: NatsConnection; readonly jsm: JetStreamManager };

/** Connects (waiting for the first connection) and waits for JetStream to answer. */
export async function connectPrimary(servers: string[], security: NatsSecurity, log: Logger): Promise<PrimaryNats> {
  log.info({ servers, ...describeNatsSecurity(security) }, "connecting to NATS");
  const nc = await connect({
    servers,
    name: "fanout-gateway-primary",
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    ...natsJsOptions(security),
  });
  try {
    return { nc, jsm: await whileElecting("JetStream", log, () => jetstreamManager(nc)) };
  } catch (e) {
    await nc.close();
    throw e;
  }
}

/**
 * Ensures the streams exist with the configured settings (with regions: in the home region, and this region's
 * mirror of each: regions.ts) and the presence bucket (when the server can hold it), and keeps the connection
 * for the watch that looks after them from then on. A failure closes the connection.
 */
export async function prepareStreams(
  { nc, jsm }: PrimaryNats,
  streams: readonly StreamSection[],
  presence: PresenceSection,
  log: Logger,
  regions?: RegionLayout,
): Promise<PrimaryStreams> {
  let bucket: boolean;
  let mirrors: OwnStream[];
  try {
    mirrors = regionMirrors(streams, regions);
    for (const stream of streams) await whileElecting(`stream ${stream.name}`, log, () => ensureStream(jsm, stream, log));
    for (const m of mirrors) await whileElecting(m.what, log, () => ensureOwnStream(jsm, m.wanted, m.fields, log, m.what));
    // Presence is one feature, not the gateway: a server without per-message TTL (before 2.11) refuses the
    // bucket, and everything else still works (presence requests then fail with broker_error). A failure
    // that may pass (a timeout while a fresh cluster elects leaders) is tried again first.
    bucket = await ensurePresenceBucket(jsm, presence, log).then(
      () => true,
      (e: unknown) => {
        log.error({ err: e, bucket: presence.bucket }, "presence bucket could not be created (nats-server 2.11+ is needed): presence is unavailable");
        return false;
      },
    );
  } catch (e) {
    await nc.close();
    throw e;
  }
  let watch: StreamWatch | undefined;
  return {
    nc,
    jsm,
    watch(o) {
      const own = [...mirrors, ...(o.own ?? [])];
      watch = new StreamWatch(jsm, streams, bucket ? presence : undefined, log, { ...o, own });
      watch.start();
      // Between two looks, an update or deletion of a stream or a bucket is looked at when JetStream says so.
      const w = watch;
      const names = [...streams.map((s) => s.name), ...(bucket ? [presenceStream(presence.bucket)] : []), ...own.map((s) => s.wanted.name)];
      for (const name of names)
        for (const what of ["UPDATED", "DELETED"])
          nc.subscribe(`$JS.EVENT.ADVISORY.STREAM.${what}.${name}`, { callback: guarded("stream advisory", () => void w.check()) });
    },
    async mirrorLag() {
      const out: { stream: string; lag: number }[] = [];
      for (const m of mirrors) {
        const si = await jsm.streams.info(m.wanted.name).catch(() => undefined);
        if (si?.mirror) out.push({ stream: m.wanted.name, lag: si.mirror.lag });
      }
      return out;
    },
    async close() {
      watch?.stop();
      await nc.close();
    },
  };
}
