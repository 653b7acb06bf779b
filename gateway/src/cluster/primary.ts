import cluster, { type Worker } from "node:cluster";
import client from "prom-client";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { EmbeddedNats } from "../broker/embedded-nats.js";
import { ensureStream } from "../broker/stream.js";
import { WORKER_CONFIG_ENV, type Config } from "../config/config.js";
import { createLogger, type Logger } from "../log.js";
import { freePort } from "../net.js";
import { loadUws } from "../uws.js";
import { isFgwMessage, type ToPrimary, type ToWorker } from "./ipc.js";
import { authEnabled, loadKeyMaterial } from "../auth/keys.js";
import { tlsEnabled } from "../auth/config-check.js";

const MAX_BACKOFF_MS = 30_000;
const STABLE_AFTER_MS = 30_000;

/**
 * The primary: starts the embedded broker if needed, ensures the stream, forks the workers, restarts crashed
 * ones with backoff, serves aggregated metrics to workers, and coordinates a bounded graceful shutdown.
 */
export async function runPrimary(config: Config): Promise<void> {
  const log = createLogger(config.logLevel, { role: "primary" });
  loadUws(); // refuse the pure-JS fallback before forking anything
  const embedded: { nats?: EmbeddedNats; stop: (timeoutMs?: number) => Promise<void> } = { stop: async () => {} };
  let shuttingDown = false;
  const fail = async (e: unknown): Promise<never> => {
    log.fatal({ err: e }, (e as Error).message);
    await embedded.stop();
    process.exit(1);
  };

  let natsUrl = config.natsUrl;
  let redisUrl = config.redisUrl;
  try {
    loadKeyMaterial(config); // fail fast on an unreadable key; each worker loads its own copy
    if (config.broker === "jetstream") {
      if (natsUrl.length === 0) {
        const nats = new EmbeddedNats({ bin: config.natsServerBin, dataDir: config.natsDataDir, log });
        embedded.nats = nats;
        embedded.stop = (t?: number) => nats.stop(t);
        await nats.start();
        natsUrl = [nats.url];
      }
      await prepareStream(config, natsUrl, log);
    } else if (!redisUrl) {
      const { EmbeddedRedis } = await import("../broker/embedded-redis.js");
      const redis = new EmbeddedRedis({ bin: config.redisServerBin, log });
      embedded.stop = (t?: number) => redis.stop(t);
      await redis.start();
      redisUrl = redis.url;
    }
  } catch (e) {
    return fail(e);
  }

  const port = config.port === 0 ? await freePort(config.host) : config.port;
  const tlsPort = tlsEnabled(config) && config.tlsPort === 0 ? await freePort(config.host) : config.tlsPort;
  const workerConfig: Config = Object.freeze({ ...config, natsUrl, redisUrl, port, tlsPort });
  const aggregator = new client.AggregatorRegistry();
  const own = new client.Registry();
  const restarts = new client.Counter({ name: "fanout_worker_restarts_total", help: "Workers restarted after a crash", registers: [own] });
  new client.Gauge({ name: "fanout_workers", help: "Worker processes running", registers: [own], collect() { this.set(Object.keys(cluster.workers ?? {}).length); } });

  cluster.setupPrimary({ args: [], silent: false });
  const env = { [WORKER_CONFIG_ENV]: JSON.stringify(workerConfig) };
  let booted = false;
  let failures = 0;
  const startedAt = new Map<number, number>();

  const fork = (): Worker => {
    const w = cluster.fork(env);
    startedAt.set(w.id, Date.now());
    return w;
  };

  cluster.on("message", (worker, m: unknown) => {
    if (!isFgwMessage(m)) return;
    const msg = m as ToPrimary;
    if (msg.type === "fgw:metrics-req") {
      Promise.all([aggregator.clusterMetrics(), own.metrics()]).then(
        ([text, mine]) => reply(worker, { type: "fgw:metrics-res", id: msg.id, text: text + "\n" + mine, contentType: aggregator.contentType }),
        (e) => reply(worker, { type: "fgw:metrics-res", id: msg.id, error: (e as Error).message }),
      );
    }
  });

  cluster.on("exit", (worker, code, signal) => {
    if (shuttingDown) return;
    if (!booted) {
      void fail(new Error(`worker ${worker.id} exited during startup (code ${code}, signal ${signal}); see its log above`));
      return;
    }
    const lived = Date.now() - (startedAt.get(worker.id) ?? 0);
    startedAt.delete(worker.id);
    failures = lived > STABLE_AFTER_MS ? 0 : failures + 1;
    const delay = Math.min(config.restartBackoffMs * 2 ** Math.max(failures - 1, 0), MAX_BACKOFF_MS);
    restarts.inc();
    log.error({ worker: worker.id, pid: worker.process.pid, code, signal, restartInMs: delay }, "worker exited; restarting");
    setTimeout(() => {
      if (!shuttingDown) fork();
    }, delay);
  });

  const listening = new Promise<void>((resolve) => {
    let ready = 0;
    cluster.on("message", (_w, m: unknown) => {
      if (isFgwMessage(m) && (m as ToPrimary).type === "fgw:listening" && !booted && ++ready === config.workers) resolve();
    });
  });
  for (let i = 0; i < config.workers; i++) fork();
  await listening;
  booted = true;
  if (config.broker === "jetstream" && config.natsUrl.length === 0) {
    log.warn({ nats: natsUrl[0] }, "no NATS_URL: using the embedded nats-server (single node; set NATS_URL for a real cluster)");
  }
  if (!authEnabled(config)) {
    log.warn("AUTHENTICATION IS OFF: every client may subscribe and publish to every channel. Set JWT_SECRET, JWT_PUBLIC_KEY_FILE or JWT_JWKS_FILE (see gateway/AUTH.md)");
  }
  log.info({ port, host: config.host, workers: config.workers, broker: config.broker, nats: config.broker === "jetstream" ? natsUrl : undefined, redis: config.broker === "redis" ? redisUrl : undefined, ws: `ws://localhost:${port}/ws`, wss: tlsEnabled(config) ? `wss://localhost:${tlsPort}/ws` : undefined, tlsPort: tlsEnabled(config) ? tlsPort : undefined, auth: authEnabled(config) }, "gateway ready");

  const shutdown = async (signal: string): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    const deadline = Date.now() + config.shutdownTimeoutMs;
    log.info({ signal, timeoutMs: config.shutdownTimeoutMs }, "shutting down: draining workers");
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => !!w);
    const exited = Promise.all(workers.map((w) => new Promise<void>((r) => (w.isDead() ? r() : w.once("exit", () => r())))));
    for (const w of workers) reply(w, { type: "fgw:shutdown" });
    const workerBudget = Math.max(config.shutdownTimeoutMs * 0.7, 100);
    const timedOut = await Promise.race([exited.then(() => false), delay(workerBudget).then(() => true)]);
    if (timedOut) {
      log.warn("workers did not finish draining in time; killing them");
      for (const w of workers) if (!w.isDead()) w.process.kill("SIGKILL");
    }
    await embedded.stop(Math.max(deadline - Date.now() - 200, 100));
    log.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

function reply(w: Worker, m: ToWorker): void {
  if (w.isConnected()) w.send(m);
}

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** Connects once, ensures the stream exists with the configured settings, and disconnects. */
async function prepareStream(config: Config, servers: string[], log: Logger): Promise<void> {
  log.info({ servers }, "connecting to NATS");
  const nc = await connect({ servers, name: "fanout-gateway-primary", waitOnFirstConnect: true, maxReconnectAttempts: -1, reconnectTimeWait: 500 });
  try {
    const jsm = await jetstreamManager(nc);
    await ensureStream(jsm, config, log);
  } finally {
    await nc.close();
  }
}
