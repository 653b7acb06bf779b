// Starts a real JetStream supercluster of three regions (the project's pinned nats-server) from
// deploy/nats/supercluster/region.conf, the file scripts/nats-supercluster.sh uses: each region a single-node
// cluster with JetStream, joined to the others by gateways on loopback. Every region's gateway is reached by
// the others through a TCP proxy of its own (its advertised address), so a test can delay, stall or cut the
// links into one region, or split two regions (the proxy knows which region a connection comes from by the
// gateway name in its CONNECT). Ports are picked at run time (bind 0, release); a start that loses a port race is
// retried with fresh ports. Ready when every region is healthy, has its two outbound gateways, and all agree
// on one JetStream meta leader.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { getJson, healthy, holdFreePorts, natsProcess, startWithPortRetry, type NatsProcess } from "./nats-node.js";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.js";
import { waitFor } from "./wait.js";
import { PACKAGE_ROOT } from "../src/config/config.js";

export const NATS_REGION_CONF = resolve(PACKAGE_ROOT, "deploy/nats/supercluster/region.conf");

/** The regions' names: their NATS cluster and gateway names, and the gateway's REGION. */
export const REGION_NAMES = ["a", "b", "c"] as const;
export type RegionName = (typeof REGION_NAMES)[number];

export type SuperclusterOptions = {
  /** "always" fsyncs every write before the ack; "default" keeps the server's 2-minute interval. */
  sync?: "default" | "always";
  /** Time allowed for the supercluster (or a restarted region) to become ready. */
  readyTimeoutMs?: number;
};

export type RegionNode = {
  region: RegionName;
  url: string;
  port: number;
  monitorPort: number;
  storeDir: string;
  /** The proxy the other regions reach this region's gateway through: `delay(ms)`, `stall()`, `cut()` its links. */
  readonly links: TcpProxy;
  readonly running: boolean;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after 5 s. */
  stop(): Promise<void>;
  /** Starts the region's node again on the same ports and store; resolves once it is healthy, joined and sees the meta leader. */
  restart(): Promise<void>;
};

export type Supercluster = {
  regions: Record<RegionName, RegionNode>;
  /**
   * On: the gateway connections between regions `x` and `y` are dropped, both ways, and every new one is
   * refused; each keeps its links with the third region and its clients. Off: they connect again (waitJoined).
   */
  split(x: RegionName, y: RegionName, on: boolean): void;
  /** Polls until every running region has its gateways up and reports the same JetStream meta leader. */
  waitJoined(timeoutMs?: number): Promise<string>;
  /** Stops every region, closes the proxies and removes the stores. */
  stop(): Promise<void>;
};

type Jsz = { meta_cluster?: { leader?: string } };
type Gatewayz = { outbound_gateways?: Record<string, unknown>; inbound_gateways?: Record<string, unknown> };

/** The region's meta leader when it is healthy and has an outbound gateway to each of the `peers` running regions. */
async function joined(monitorPort: number, peers: number): Promise<string | undefined> {
  if (!(await healthy(monitorPort))) return undefined;
  const gw = await getJson<Gatewayz>(`http://127.0.0.1:${monitorPort}/gatewayz`);
  if (Object.keys(gw?.outbound_gateways ?? {}).length < peers || Object.keys(gw?.inbound_gateways ?? {}).length < peers) return undefined;
  return (await getJson<Jsz>(`http://127.0.0.1:${monitorPort}/jsz`))?.meta_cluster?.leader || undefined;
}

/** The region a gateway connection comes from: its CONNECT names it (`"gateway":"a"`), the first line it sends. */
const gatewayOf = (first: Buffer): string | undefined => /"gateway":"([^"]+)"/.exec(first.toString("latin1"))?.[1];

export async function startSupercluster(opts: SuperclusterOptions = {}): Promise<Supercluster> {
  return startWithPortRetry(() => tryStart(opts));
}

const JOINED = "regions joined by gateways, with one JetStream meta leader";

async function tryStart(opts: SuperclusterOptions): Promise<Supercluster> {
  const readyTimeoutMs = opts.readyTimeoutMs ?? 30_000;
  const dir = mkdtempSync(join(tmpdir(), "fgw-nats-supercluster-"));
  const n = REGION_NAMES.length;
  // The proxies listen on ports of their own (0) while the nodes' ports are still held: none can take one.
  const held = await holdFreePorts(n * 4);
  const ports = held.ports;
  const gatewayPort = (i: number) => ports[2 * n + i]!;
  const proxies = await Promise.all(REGION_NAMES.map((_, i) => startTcpProxy({ host: "127.0.0.1", port: gatewayPort(i) }, { peerOf: gatewayOf })));
  await held.release();
  const nodes = {} as Record<RegionName, RegionNode>;
  const all: RegionNode[] = [];
  const procs: NatsProcess[] = [];
  const launchers: (() => void)[] = [];

  for (const [i, region] of REGION_NAMES.entries()) {
    const port = ports[i]!;
    const clusterPort = ports[n + i]!;
    const monitorPort = ports[3 * n + i]!;
    const storeDir = join(dir, region);
    mkdirSync(storeDir, { recursive: true });
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NATS_NAME: `n-${region}`,
      NATS_REGION: region,
      NATS_LISTEN: `127.0.0.1:${port}`,
      NATS_HTTP: `127.0.0.1:${monitorPort}`,
      NATS_CLUSTER_LISTEN: `127.0.0.1:${clusterPort}`,
      NATS_ROUTE: `nats://127.0.0.1:${clusterPort}`,
      NATS_GATEWAY_LISTEN: `127.0.0.1:${gatewayPort(i)}`,
      NATS_GATEWAY_ADVERTISE: `127.0.0.1:${proxies[i]!.port}`,
      NATS_STORE_DIR: storeDir,
      NATS_SYNC_INTERVAL: opts.sync === "always" ? "always" : "120s",
    };
    for (const [j, r] of REGION_NAMES.entries()) {
      env[`NATS_GW_${j + 1}_NAME`] = r;
      env[`NATS_GW_${j + 1}_URL`] = `nats://127.0.0.1:${proxies[j]!.port}`;
    }
    const proc = natsProcess(`of region ${region}`, NATS_REGION_CONF, env);
    procs.push(proc);
    const node: RegionNode = {
      region,
      port,
      monitorPort,
      storeDir,
      url: `nats://127.0.0.1:${port}`,
      links: proxies[i]!,
      get running() {
        return proc.running;
      },
      kill: () => proc.stop("SIGKILL"),
      stop: () => proc.stop("SIGTERM"),
      restart: async () => {
        if (proc.running) throw new Error(`region ${region} is still running`);
        proc.launch();
        const peers = all.filter((o) => o !== node && o.running).length;
        await waitFor(
          async () => {
            if (!proc.running) throw proc.exitedError();
            return joined(monitorPort, peers);
          },
          { timeoutMs: readyTimeoutMs, what: `region ${region} joined again after its restart` },
        );
      },
    };
    nodes[region] = node;
    all.push(node);
    launchers.push(() => {
      proc.launch();
      if (!proc.running) throw proc.exitedError();
    });
  }

  /** The one JetStream meta leader every running region agrees on, once each sees the others' gateways. */
  const joinedLeader = async (): Promise<string | undefined> => {
    const up = all.filter((r) => r.running);
    const leaders = await Promise.all(up.map((r) => joined(r.monitorPort, up.length - 1)));
    const first = leaders[0];
    return first && leaders.every((l) => l === first) ? first : undefined;
  };

  const sc: Supercluster = {
    regions: nodes,
    split(x, y, on) {
      nodes[x].links.refuseFrom(y, on);
      nodes[y].links.refuseFrom(x, on);
    },
    waitJoined: (timeoutMs = readyTimeoutMs) => waitFor(joinedLeader, { timeoutMs, what: JOINED }),
    stop: async () => {
      await Promise.all(all.map((r) => r.stop()));
      await Promise.all(proxies.map((p) => p.close()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    for (const l of launchers) l();
    // At the start every node must run: one that exited (a port taken between the pick and its bind) fails
    // the start at once with its stderr, and startWithPortRetry tries again on other ports.
    await waitFor(
      () => {
        procs.forEach((p) => {
          if (!p.running) throw p.exitedError();
        });
        return joinedLeader();
      },
      { timeoutMs: readyTimeoutMs, what: JOINED },
    );
  } catch (e) {
    await sc.stop();
    throw e;
  }
  return sc;
}
