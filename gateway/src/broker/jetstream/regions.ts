import { DiscardPolicy, RetentionPolicy, StorageType, type StreamConfig } from "@nats-io/jetstream";
import { nanos } from "@nats-io/transport-node";
import type { RegionLayout, StreamSection } from "../../config/sections/index.js";
import { ProcessError } from "../../errors.js";
import type { OwnStream } from "./own-stream.js";
import { inCluster } from "./stream.js";

/**
 * The regions' layout of one channel stream (docs/operations.md "Regions"): the stream (the origin) lives in
 * the home region (stream.ts places it there, republishing under the home region's live prefix); every other
 * region holds a mirror of it, `<stream>-<region>`, that keeps the origin's sequences, answers direct gets
 * addressed to the origin by name in its region (`mirror_direct`) and republishes every message it copies
 * under its region's own live prefix, where that region's gateways take their live feed from. Pure.
 */
export function mirrorName(origin: string, region: string): string {
  return `${origin}-${region}`;
}

/** The mirror of stream `c` in `region` as the gateway wants it; `c.livePrefix` is that region's (the gateway's own). */
export function desiredMirror(c: StreamSection, region: string): Partial<StreamConfig> & { name: string } {
  return {
    name: mirrorName(c.name, region),
    mirror: { name: c.name } as StreamConfig["mirror"],
    placement: inCluster(region),
    storage: c.storage === "memory" ? StorageType.Memory : StorageType.File,
    num_replicas: c.replicas,
    // The origin's limits, so that the mirror holds what the origin holds; with the origin's consumer limit
    // and TTL switch too, a mirror promoted to be the origin (docs/operations.md "Failover") is the stream
    // the gateway wants but for its duplicate window, which a mirror does not keep.
    max_age: nanos(c.maxAgeMs),
    max_msgs_per_subject: c.maxMsgsPerSubject,
    max_bytes: c.maxBytes,
    retention: RetentionPolicy.Limits,
    discard: DiscardPolicy.Old,
    max_consumers: c.maxConsumers,
    ...(c.allowMsgTtl ? { allow_msg_ttl: true } : {}),
    allow_direct: true,
    mirror_direct: true,
    republish: { src: `${c.subjectPrefix}.>`, dest: `${c.livePrefix}.>` },
  };
}

/** The settings of a mirror the stream watch keeps (stream-watch.ts, own-stream.ts); its limits are the operator's. */
const MIRROR_KEPT: readonly (keyof StreamConfig)[] = ["mirror", "placement", "allow_direct", "mirror_direct", "republish"];

/**
 * The mirrors this gateway's region holds, one per channel stream, as streams the primary makes and its watch
 * keeps; none in the home region (it holds the origins) or without regions. A mirror whose name is a channel
 * stream's is refused (a namespace stream named `<stream>-<region>`).
 */
export function regionMirrors(streams: readonly StreamSection[], layout: RegionLayout | undefined): OwnStream[] {
  if (!layout || layout.region === layout.home) return [];
  const origins = new Set(streams.map((s) => s.name));
  return streams.map((s) => {
    const wanted = desiredMirror(s, layout.region);
    if (origins.has(wanted.name))
      throw new ProcessError(
        "ERR_STREAM_MISMATCH",
        `the mirror of stream ${s.name} in region ${layout.region} would be named ${wanted.name}, a channel stream's name`,
      );
    return { wanted, fields: MIRROR_KEPT, what: `region ${layout.region}'s mirror of ${s.name}`, drift: "region_mirror" };
  });
}
