// The chaos run's regions topology (`--regions`): the test kit's supercluster of three regions (a, b, c; one
// NATS node each, joined by gateways through link proxies that can be cut or delayed) and one gateway
// instance per region (home region a: the origin stream lives there, b and c read from their mirrors). The
// clients rotate over the three instances, so every reconnect of a resuming subscriber resumes in another
// region. Every process started here is killed by stopAll().
import { startSupercluster, REGION_NAMES, type Supercluster } from "#testkit/nats-supercluster.js";
import { pickFreePorts } from "#testkit/nats-cluster.js";
import { startTcpProxy } from "#testkit/tcp-proxy.js";
import { Instance, type Topology } from "./topology.js";

/** The flags that put a gateway instance in its region. */
export const regionArgs = (region: string): string[] => ["--region", region, "--regions", REGION_NAMES.join(","), "--region-resume-wait", "3s"];

export async function startRegionsTopology(env: Record<string, string> = {}): Promise<Topology> {
  const regions: Supercluster = await startSupercluster({ readyTimeoutMs: 60_000 });
  const instances: Instance[] = [];
  const stopAll = async (): Promise<void> => {
    for (const i of instances) {
      i.closed = true;
      for (const p of await i.workerPids()) i.pids.add(p);
      i.killAll();
    }
    await regions.stop();
    await Promise.all(instances.flatMap((i) => i.links.map((l) => l.close())));
  };
  try {
    const ports = await pickFreePorts(3);
    for (const [i, r] of REGION_NAMES.entries()) {
      const link = await startTcpProxy({ host: "127.0.0.1", port: regions.regions[r].port });
      instances.push(new Instance(i, ports[i]!, [link], env, regionArgs(r)));
    }
    // The home region's instance makes the origin; then b's and c's make their mirrors.
    await instances[0]!.start();
    await Promise.all(instances.slice(1).map((i) => i.start()));
  } catch (e) {
    await stopAll();
    throw e;
  }
  return { regions, natsUrls: REGION_NAMES.map((r) => regions.regions[r].url), instances, stopAll };
}
