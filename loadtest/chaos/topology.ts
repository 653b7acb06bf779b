// The chaos run's servers: the test kit's 3-node JetStream cluster (R3 stream) and three gateway instances on
// fixed ports (so clients find a restarted instance where it was), 2 workers each. Every process started here
// is killed by stopAll(), whatever state the run left it in (a stopped NATS node gets SIGCONT first).
import { existsSync } from "node:fs";
import { startNatsCluster, pickFreePorts, type NatsCluster } from "#testkit/nats-cluster.js";
import { startGateway, childPids, type GatewayHandle } from "#testkit/gateway.js";
import { waitFor } from "#testkit/wait.js";
import { startTcpProxy, type TcpProxy } from "#testkit/tcp-proxy.js";
import type { Supercluster } from "#testkit/nats-supercluster.js";

export const STREAM = "FANOUT_CHANNELS";
export const SUBJECT_PREFIX = "ev";

const alive = (pid: number) => existsSync(`/proc/${pid}`);

export class Instance {
  gw?: GatewayHandle;
  /** Every gateway process this instance ran (one per start), with its log lines. */
  readonly runs: GatewayHandle[] = [];
  /** Every pid this instance ever had (primary and workers), killed at the end if still alive. */
  readonly pids = new Set<number>();
  /** Set by stopAll: a start still under way (a fault's lane) kills what it started instead of leaving it. */
  closed = false;

  /** @param links this instance's way to each NATS node (so its network can be stalled or slowed alone) */
  constructor(
    readonly index: number,
    readonly port: number,
    readonly links: TcpProxy[],
    /** Extra environment (the events webhook's receiver). */
    readonly env: Record<string, string> = {},
    /** The flags of this topology (the stream's replicas, or the instance's region). */
    readonly topologyArgs: readonly string[] = ["--stream-replicas", "3"],
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts the instance on its port, again after a port clash (see retryInUse in faults.ts), bounded. */
  async start(): Promise<void> {
    for (let i = 1; ; i++) {
      try {
        return await this.startOnce();
      } catch (e) {
        if (i >= 10 || !/address already in use|EADDRINUSE|listen/i.test(String(e))) throw e;
        await new Promise((r) => setTimeout(r, 2_000));
      }
    }
  }

  private async startOnce(): Promise<void> {
    this.gw = await startGateway({
      natsUrl: this.links.map((l) => l.url),
      workers: 2,
      port: this.port,
      env: this.env,
      // A start during a NATS node's restart waits for the stream's leader (the gateway retries its set-up).
      readyTimeoutMs: 90_000,
      logLevel: "info", // the kit waits for the "gateway ready" line
      // Every client is 127.0.0.1: the per-IP abuse limits would refuse the resume bursts.
      // A message held by a killed worker's durable comes back after the ack wait: 5 s, not 30, so the run's
      // end can wait for it.
      args: [
        ...this.topologyArgs,
        "--shutdown-timeout",
        "5s",
        "--durable-ack-wait",
        "5s",
        "--max-connections-per-ip=-1",
        "--connect-rate-per-ip=-1",
        "--frame-rate=-1",
        "--publish-rate=-1",
        // SSE subscribers take a stream without a heartbeat for 3 intervals as dead (clients.ts).
        "--sse-heartbeat",
        "2s",
      ],
    });
    this.runs.push(this.gw);
    this.pids.add(this.gw.process.pid!);
    for (const p of await this.workerPids()) this.pids.add(p);
    if (this.closed) {
      this.killAll();
      throw new Error(`gateway ${this.index} started after the run was stopped; killed`);
    }
  }

  async workerPids(): Promise<number[]> {
    return this.gw?.process.pid ? childPids(this.gw.process.pid) : [];
  }

  /** SIGKILL of the primary; its workers see the IPC channel close and exit (waited for, then killed). */
  async killPrimary(): Promise<void> {
    const gw = this.gw!;
    const workers = await this.workerPids();
    gw.process.kill("SIGKILL");
    await gw.exited;
    await waitFor(() => workers.every((p) => !alive(p)), { timeoutMs: 10_000, what: "orphaned workers to exit" }).catch(() => {
      for (const p of workers) if (alive(p)) process.kill(p, "SIGKILL");
    });
  }

  /** SIGTERM: the gateway drains (sockets closed with 1001) and exits. */
  async stopGraceful(): Promise<void> {
    await this.gw!.stop("SIGTERM");
  }

  async ready(timeoutMs: number): Promise<void> {
    await waitFor(
      async () => {
        const r = await fetch(`${this.url}/readyz`, { signal: AbortSignal.timeout(2_000) });
        return r.status === 200;
      },
      { timeoutMs, intervalMs: 100, what: `gateway ${this.index} ready` },
    );
  }

  killAll(): void {
    for (const p of this.pids) {
      try {
        process.kill(p, "SIGKILL");
      } catch {
        /* gone */
      }
    }
  }
}

/**
 * The servers of a run: the NATS nodes (`cluster`, or `regions`: regions.ts) and the three gateway instances.
 * `natsUrls`: every NATS node, for the orchestrator and the clients that publish to NATS directly.
 */
export type Topology = { cluster?: NatsCluster; regions?: Supercluster; natsUrls: string[]; instances: Instance[]; stopAll(): Promise<void> };

export async function startTopology(env: Record<string, string> = {}): Promise<Topology> {
  const cluster = await startNatsCluster({ readyTimeoutMs: 30_000 });
  const instances: Instance[] = [];
  const stopAll = async (): Promise<void> => {
    for (const i of instances) {
      i.closed = true;
      for (const p of await i.workerPids()) i.pids.add(p);
      i.killAll();
    }
    for (const n of cluster.nodes) if (n.running) n.process.kill("SIGCONT");
    await Promise.all(cluster.nodes.map((n) => n.kill()));
    await cluster.stop();
    await Promise.all(instances.flatMap((i) => i.links.map((l) => l.close())));
  };
  try {
    const ports = await pickFreePorts(3);
    for (let i = 0; i < 3; i++) {
      // Links are stalled or delayed, never cut: a cut would send the gateway's NATS client straight to the
      // addresses the cluster advertises, around the proxy.
      const links = await Promise.all(cluster.nodes.map((n) => startTcpProxy({ host: "127.0.0.1", port: n.port })));
      instances.push(new Instance(i, ports[i]!, links, env));
    }
    // The first creates the R3 stream; right after the cluster agrees on a meta leader, placement can still
    // answer "no suitable peers" for a moment (the gateway then exits): retried, bounded.
    for (let attempt = 1; ; attempt++) {
      try {
        await instances[0]!.start();
        break;
      } catch (e) {
        if (attempt >= 5 || !/no suitable peers/.test(String(e))) throw e;
        await new Promise((r) => setTimeout(r, 1_000));
      }
    }
    await Promise.all(instances.slice(1).map((i) => i.start()));
  } catch (e) {
    await stopAll();
    throw e;
  }
  return { cluster, natsUrls: cluster.urls, instances, stopAll };
}
