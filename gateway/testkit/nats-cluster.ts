// Starts a real 3-node JetStream cluster (the project's pinned nats-server) from deploy/nats/cluster/node.conf,
// the same file scripts/nats-cluster.sh and deploy/compose.yaml use. Route ports must be known before any node
// starts, so ports are picked at run time by binding port 0 and releasing; a start that loses a port race is
// retried with fresh ports. Readiness is polled: every node healthy and agreeing on one JetStream meta leader.
import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { getJson, healthy, natsProcess, pickFreePorts, startWithPortRetry, type NatsProcess } from "./nats-node.js";
import { waitFor } from "./wait.js";
import { PACKAGE_ROOT } from "../src/config/config.js";

// Importers of this module (tests, loadtest/chaos) take these from here.
export { getJson, pickFreePorts } from "./nats-node.js";

export const NATS_CLUSTER_CONF = resolve(PACKAGE_ROOT, "deploy/nats/cluster/node.conf");

export type NatsClusterOptions = {
  /** "always" fsyncs every write before the ack; "default" keeps the server's 2-minute interval. */
  sync?: "default" | "always";
  /** Time allowed for the cluster (or a restarted node) to become ready. */
  readyTimeoutMs?: number;
};

export type NatsClusterNode = {
  name: string;
  url: string;
  port: number;
  clusterPort: number;
  monitorPort: number;
  storeDir: string;
  readonly process: ChildProcess;
  /** True while the process runs. */
  readonly running: boolean;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after 5 s. */
  stop(): Promise<void>;
  /** Starts the node again on the same ports and store; resolves once it is healthy and sees the meta leader. */
  restart(): Promise<void>;
};

export type NatsCluster = {
  urls: string[];
  nodes: NatsClusterNode[];
  /** Polls until every running node reports the same JetStream meta leader; returns its server name. */
  waitForMetaLeader(timeoutMs?: number): Promise<string>;
  /** Stops every node and removes the store directories. */
  stop(): Promise<void>;
};

type Jsz = { meta_cluster?: { leader?: string; cluster_size?: number } };

const SIZE = 3;

export async function startNatsCluster(opts: NatsClusterOptions = {}): Promise<NatsCluster> {
  return startWithPortRetry(() => tryStart(opts));
}

async function tryStart(opts: NatsClusterOptions): Promise<NatsCluster> {
  const readyTimeoutMs = opts.readyTimeoutMs ?? 30_000;
  const dir = mkdtempSync(join(tmpdir(), "fgw-nats-cluster-"));
  const ports = await pickFreePorts(SIZE * 3);
  const routes = Array.from({ length: SIZE }, (_, i) => `nats://127.0.0.1:${ports[SIZE + i]}`);
  const nodes: NatsClusterNode[] = [];
  const procs: NatsProcess[] = [];

  for (let i = 0; i < SIZE; i++) {
    const name = `n${i + 1}`;
    const port = ports[i]!;
    const clusterPort = ports[SIZE + i]!;
    const monitorPort = ports[2 * SIZE + i]!;
    const storeDir = join(dir, name);
    mkdirSync(storeDir, { recursive: true });
    const env = {
      ...process.env,
      NATS_NAME: name,
      NATS_LISTEN: `127.0.0.1:${port}`,
      NATS_HTTP: `127.0.0.1:${monitorPort}`,
      NATS_CLUSTER_LISTEN: `127.0.0.1:${clusterPort}`,
      NATS_ROUTE_1: routes[0],
      NATS_ROUTE_2: routes[1],
      NATS_ROUTE_3: routes[2],
      NATS_STORE_DIR: storeDir,
      NATS_SYNC_INTERVAL: opts.sync === "always" ? "always" : "120s",
    };
    const proc = natsProcess(name, NATS_CLUSTER_CONF, env);
    const node: NatsClusterNode = {
      name,
      port,
      clusterPort,
      monitorPort,
      storeDir,
      url: `nats://127.0.0.1:${port}`,
      get process() {
        return proc.child!;
      },
      get running() {
        return proc.running;
      },
      kill: () => proc.stop("SIGKILL"),
      stop: () => proc.stop("SIGTERM"),
      restart: async () => {
        if (proc.running) throw new Error(`${name} is still running`);
        proc.launch();
        await waitFor(
          async () => {
            if (!proc.running) throw proc.exitedError();
            if (!(await healthy(monitorPort))) return undefined;
            const jsz = await getJson<Jsz>(`http://127.0.0.1:${monitorPort}/jsz`);
            return jsz?.meta_cluster?.leader ? true : undefined;
          },
          { timeoutMs: readyTimeoutMs, what: `${name} healthy after restart` },
        );
      },
    };
    nodes.push(node);
    procs.push(proc);
  }

  const cluster: NatsCluster = {
    urls: nodes.map((n) => n.url),
    nodes,
    waitForMetaLeader: (timeoutMs = readyTimeoutMs) =>
      waitFor(
        async () => {
          const up = nodes.filter((n) => n.running);
          const leaders = await Promise.all(up.map(async (n) => (await getJson<Jsz>(`http://127.0.0.1:${n.monitorPort}/jsz`))?.meta_cluster?.leader));
          const first = leaders[0];
          return first && leaders.every((l) => l === first) ? first : undefined;
        },
        { timeoutMs, what: "JetStream meta leader agreed by all nodes" },
      ),
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };

  try {
    for (const p of procs) p.launch();
    await waitFor(
      async () => {
        nodes.forEach((n, i) => {
          if (!n.running) throw procs[i]!.exitedError();
        });
        const ok = await Promise.all(nodes.map((n) => healthy(n.monitorPort)));
        return ok.every(Boolean) || undefined;
      },
      { timeoutMs: readyTimeoutMs, what: "all cluster nodes healthy" },
    );
    await cluster.waitForMetaLeader();
  } catch (e) {
    await cluster.stop();
    throw e;
  }
  return cluster;
}
