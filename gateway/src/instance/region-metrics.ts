import client from "prom-client";
import type { PrimaryStreams } from "../broker/jetstream/primary-streams.js";

/**
 * Regions: `fanout_region_mirror_lag_messages{stream}`, read from each of this region's mirrors when scraped
 * (JetStream's `mirror.lag`: messages the origin holds that the mirror has not copied, as the mirror last
 * heard). A resume past what the mirror holds waits for it up to REGION_RESUME_WAIT. Nothing in the home region.
 */
export function registerRegionMetrics(registry: client.Registry, streams: PrimaryStreams): void {
  new client.Gauge({
    name: "fanout_region_mirror_lag_messages",
    help: "Messages the home region's stream holds that this region's mirror has not copied yet (from the mirror's stream info)",
    labelNames: ["stream"],
    registers: [registry],
    async collect() {
      this.reset();
      for (const { stream, lag } of await streams.mirrorLag()) this.labels(stream).set(lag);
    },
  });
}
