// A gateway in one region of the test kit's supercluster (nats-supercluster.ts): the region tests', the
// regions bench's and the chaos run's one way to start it. REGIONS is every region of the supercluster (a, b,
// c); HOME_REGION is REGIONS' first (a) unless `home` says otherwise. subRetrying: a resume there, retried as
// the SDKs do while the region's mirror is behind.
import { startGateway, type GatewayHandle, type GatewayOptions } from "./gateway.js";
import { REGION_NAMES, type RegionName, type Supercluster } from "./nats-supercluster.js";
import { waitFor } from "./wait.js";
import type { Frame, TestClient } from "./ws-client.js";

export type RegionGatewayOptions = Pick<GatewayOptions, "logLevel" | "port" | "env" | "readyTimeoutMs" | "inheritStderr"> & {
  /** HOME_REGION (default: a, REGIONS' first). */
  home?: RegionName;
  /** REGION_RESUME_WAIT, e.g. "3s" (default: the gateway's). */
  resumeWait?: string;
  /** More flags, after the region's. */
  args?: string[];
};

/** Starts a 1-worker gateway on `region`'s NATS node, with info logs, a 60 s start and a 3 s drain unless told otherwise. */
export function startRegionGateway(sc: Supercluster, region: RegionName, o: RegionGatewayOptions = {}): Promise<GatewayHandle> {
  return startGateway({
    natsUrl: sc.regions[region].url,
    workers: 1,
    logLevel: o.logLevel ?? "info",
    readyTimeoutMs: o.readyTimeoutMs ?? 60_000,
    ...(o.port !== undefined ? { port: o.port } : {}),
    ...(o.env ? { env: o.env } : {}),
    ...(o.inheritStderr ? { inheritStderr: true } : {}),
    args: [
      ...["--region", region, "--regions", REGION_NAMES.join(",")],
      ...(o.home ? ["--home-region", o.home] : []),
      ...(o.resumeWait ? ["--region-resume-wait", o.resumeWait] : []),
      ...["--shutdown-timeout", "3s"],
      ...(o.args ?? []),
    ],
  });
}

/**
 * Subscribes from `from`, again while the gateway refuses with a temporary `broker_unavailable` (this region's
 * mirror is behind the position past REGION_RESUME_WAIT), as the SDKs do; any other refusal fails. Up to 60 s.
 */
export async function subRetrying(c: TestClient, channel: string, from: { seq: number; epoch: unknown }): Promise<Frame> {
  return waitFor(
    async () => {
      const r = await c.request({ op: "sub", channel, from });
      if (r.op === "ok") return r;
      if (r.code === "broker_unavailable" && r.temporary === true) return undefined;
      throw new Error(`sub ${channel} refused: ${JSON.stringify(r)}`);
    },
    { timeoutMs: 60_000, intervalMs: 250, what: `sub ${channel} from ${from.seq} accepted` },
  );
}
