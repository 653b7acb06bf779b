// The two places the evaluation runs: the test kit's single nats-server and its local 3-node cluster (both the
// project's pinned nats-server on ephemeral ports with temporary stores), and the gateway on either.
import { startNatsServer } from "#testkit/nats-server.js";
import { startNatsCluster } from "#testkit/nats-cluster.js";
import { startGatewayProc } from "../common.js";

export type Target = "single" | "cluster";
export const TARGETS: readonly Target[] = ["single", "cluster"];

export type Servers = {
  target: Target;
  /** Client URLs, one per node. */
  urls: string[];
  /** The URLs as one comma-separated list (nats CLI `-s`, pub-cluster, the gateway's --nats-url). */
  servers: string;
  /** Highest replica count a stream can have here. */
  maxReplicas: number;
  /** The server processes (for their CPU and memory figures). */
  pids: number[];
  stop(): Promise<void>;
};

export async function startServers(target: Target): Promise<Servers> {
  if (target === "single") {
    const s = await startNatsServer();
    return { target, urls: [s.url], servers: s.url, maxReplicas: 1, pids: [s.process.pid!], stop: () => s.stop() };
  }
  const c = await startNatsCluster({ readyTimeoutMs: 60_000 });
  return { target, urls: c.urls, servers: c.urls.join(","), maxReplicas: 3, pids: c.nodes.map((n) => n.process.pid!), stop: () => c.stop() };
}

export type GatewayRun = { port: number; pid: number; stop(): Promise<void> };

/**
 * The gateway (one worker: the machine's two cores also carry the servers and the load tools) with its stream
 * `stream` on `<prefix>.>`, created with the given storage and replicas.
 */
export async function startGatewayOn(
  servers: Servers,
  stream: { name: string; prefix: string; replicas: number; storage: "file" | "memory" },
): Promise<GatewayRun> {
  const gw = await startGatewayProc(servers.servers, 1, [
    "--stream-name",
    stream.name,
    "--subject-prefix",
    stream.prefix,
    "--stream-replicas",
    String(stream.replicas),
    "--stream-storage",
    stream.storage,
  ]);
  return {
    port: gw.port,
    pid: gw.proc.pid!,
    stop: async () => {
      if (gw.proc.exitCode !== null || gw.proc.signalCode !== null) return;
      const exited = new Promise<void>((r) => gw.proc.once("exit", () => r()));
      gw.proc.kill("SIGTERM");
      const t = setTimeout(() => gw.proc.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(t);
    },
  };
}
