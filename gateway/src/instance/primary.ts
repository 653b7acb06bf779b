import { unknownSettings } from "../config/unknown-env.js";
import { SECRET_ENV } from "../config/secrets.js";
import { formerNamesUsed, settingGiven, type Config } from "../config/config.js";
import { sectionsOf, type StreamSection } from "../config/sections/index.js";
import { createLogger, type Logger } from "../log.js";
import { freePort } from "../net.js";
import { loadUws, runtimeInfo } from "../uws.js";
import { authEnabled, loadKeyMaterial } from "../auth/keys.js";
import { loadApiKeys } from "../auth/api-keys.js";
import { tlsEnabled } from "../config/checks.js";
import { exposureWarnings } from "../config/exposure.js";
import { embeddedNatsSecurity, loadNatsSecurity } from "../broker/jetstream/nats-security.js";
import { connectPrimary, prepareStreams, type PrimaryNats, type PrimaryStreams } from "../broker/jetstream/primary-streams.js";
import { streamNameInUse } from "../broker/jetstream/stream-name.js";
import { startAdmin } from "./admin.js";
import { InstanceMetrics } from "./instance-metrics.js";
import { registerRegionMetrics } from "./region-metrics.js";
import { startEmbeddedBrokers, type EmbeddedBrokers } from "./embedded.js";
import { WorkerPool } from "./pool.js";
import { adminControlDoor } from "../control/admin-door.js";
import { natsBus } from "../broker/jetstream/bus.js";
import { effectiveSettings, type EffectiveSettings } from "../namespaces/settings.js";
import { hooksSummary } from "../auth/hooks-summary.js";
import { startEventsFeature, type EventsFeature } from "../events/start.js";
import { jetStreamEventsBroker, type JetStreamEventsBroker } from "../broker/jetstream/events-broker.js";
import { callbackFaults } from "../util/guarded.js";

/** The admin port in effect: `auto` is 9100 when authentication is on and none (-1) when it is off. */
export const adminPortOf = (c: Config): number => (c.adminPort === -2 ? (authEnabled(c) ? 9100 : -1) : c.adminPort);

/**
 * The primary, by concern: embedded broker supervision (embedded.ts), the stream, the worker pool
 * (pool.ts), metrics aggregation (instance-metrics.ts) and the admin listener (admin.ts), and a bounded
 * graceful shutdown.
 */
export async function runPrimary(parsed: Config): Promise<void> {
  // The parsed config until the channel stream's name is settled (below); the workers get the settled one.
  let config = parsed;
  const log = createLogger(config.logLevel, { role: "primary" });
  callbackFaults.attach(log);
  loadUws(sectionsOf(config).server.uwsModule); // refuse a missing module or the pure-JS fallback before forking anything
  log.info(runtimeInfo(), `running on Node ${process.version}`);
  for (const f of formerNamesUsed(process.argv.slice(2), process.env)) log.warn({ was: f.was, now: f.now }, `${f.was} is deprecated: use ${f.now}`);
  const unknown = unknownSettings(process.env);
  if (unknown.length > 0)
    log.warn({ variables: unknown }, "environment variables that look like settings are not settings and are ignored (misspelt?); see --help");
  let brokers: EmbeddedBrokers | undefined;
  const fail = async (e: unknown): Promise<never> => {
    log.fatal({ err: e }, (e as Error).message);
    await brokers?.stop();
    process.exit(1);
  };

  let c = sectionsOf(config);
  let metrics: InstanceMetrics;
  let prepared: PrimaryStreams | undefined;
  let admin: { port: number; close(): Promise<void> } | undefined;
  let events: EventsFeature | undefined;
  let eventsBroker: JetStreamEventsBroker | undefined;
  try {
    loadKeyMaterial(config); // fail fast on an unreadable key; each worker loads its own copy
    loadApiKeys(sectionsOf(config).auth); // and on a wrong line of API_KEYS_FILE
    const hooks = hooksSummary(c.hooks); // and on an unreadable HOOK_SECRET_FILE
    if (hooks) log.info(hooks, "backend hooks");
    const configured = loadNatsSecurity(sectionsOf(config).broker.natsSecurity); // the same for NATS credentials
    brokers = await startEmbeddedBrokers(sectionsOf(config).broker, log);
    const security = brokers.natsToken ? embeddedNatsSecurity(brokers.natsToken) : configured;
    if (config.broker === "jetstream") {
      const nats = await connectPrimary(brokers.natsUrl, security, log);
      config = await withStreamInUse(config, nats, log);
      c = sectionsOf(config);
      prepared = await prepareStreams(nats, streamsOf(config), c.presence, log, c.regions);
    }
    // The streams' and namespaces' settings with every default filled in: logged once the streams are checked, and in /v1/stats.
    const settings = config.broker === "jetstream" ? effectiveSettings(c.stream, c.namespaces, c.events.kinds, c.fanout.coalesceMs) : undefined;
    metrics = new InstanceMetrics(settings);
    if (prepared && c.regions) registerRegionMetrics(metrics.registry, prepared);
    if (settings) logSettings(settings, log);
    if (prepared) {
      eventsBroker = jetStreamEventsBroker(prepared.nc, prepared.jsm, c.events, log);
      events = await startEventsFeature({ sections: c, broker: eventsBroker, registry: metrics.registry, log });
    }
    const adminPort = adminPortOf(config);
    if (adminPort >= 0)
      admin = await startAdmin(config.adminHost, adminPort, metrics, log, adminControlDoor(c, prepared ? natsBus(prepared.nc) : undefined, log));
  } catch (e) {
    return fail(e);
  }

  const port = config.port === 0 ? await freePort(config.host) : config.port;
  const tlsPort = tlsEnabled(config) && config.tlsPort === 0 ? await freePort(config.host) : config.tlsPort;
  // Workers get every URL and port resolved; an admin listener means they keep metrics off the public port.
  const workerConfig: Config = Object.freeze({ ...config, natsUrl: brokers.natsUrl, redisUrl: brokers.redisUrl, port, tlsPort, adminPort: admin?.port ?? -1 });
  // Workers inherit the primary's environment: the secrets go to them over IPC instead (pool.ts).
  for (const name of SECRET_ENV) delete process.env[name];
  const pool = new WorkerPool(sectionsOf(config).server, workerConfig, metrics, log, (e) => void fail(e), brokers.natsToken);
  if (events?.shares) pool.shareWith(events.shares);
  await pool.start();
  prepared?.watch({
    repair: config.streamRepair === "repair",
    intervalMs: config.streamCheckIntervalMs,
    onChange: (drift) => pool.setDrift(drift),
    own: eventsBroker?.owned() ?? [],
  });
  if (config.broker === "jetstream" && config.natsUrl.length === 0) {
    log.info({ nats: brokers.natsUrl[0] }, "no NATS_URL: using the embedded nats-server (single node; set NATS_URL for a real cluster)");
  }
  for (const w of exposureWarnings({ ...config, port }, admin?.port ?? -1)) log.warn(w);
  log.info(
    {
      port,
      host: config.host,
      workers: config.workers,
      broker: config.broker,
      nats: config.broker === "jetstream" ? brokers.natsUrl : undefined,
      redis: config.broker === "redis" ? brokers.redisUrl : undefined,
      ws: `ws://localhost:${port}/ws`,
      wss: tlsEnabled(config) ? `wss://localhost:${tlsPort}/ws` : undefined,
      tlsPort: tlsEnabled(config) ? tlsPort : undefined,
      auth: authEnabled(config),
      adminPort: admin?.port,
    },
    "gateway ready",
  );

  let shuttingDown = false;
  const shutdown = async (signal: string): Promise<void> => {
    if (shuttingDown) return;
    shuttingDown = true;
    const deadline = Date.now() + config.shutdownTimeoutMs;
    log.info({ signal, timeoutMs: config.shutdownTimeoutMs }, "shutting down: draining workers");
    // The webhook sender first, then the services (events/start.ts).
    await events?.stop();
    // The workers first: each stores its sockets' last events on its own connection before it drains it.
    await pool.stop(Math.max(config.shutdownTimeoutMs * 0.7, 100));
    await prepared?.close();
    await admin?.close();
    await brokers?.stop(Math.max(deadline - Date.now() - 200, 100));
    log.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/** The default stream's settings, and each namespace's: one line each, so that a grep for a namespace finds its line. */
function logSettings(s: EffectiveSettings, log: Logger): void {
  log.info(s.defaultStream, "default stream settings");
  for (const ns of s.namespaces) {
    const { name, ...rest } = ns;
    log.info({ namespace: name, ...rest }, "namespace settings");
  }
}

/**
 * The config with the channel stream's name settled, once, before any stream is made or worker started: without
 * STREAM_NAME, a NATS whose stream was made by the old default keeps EVENTS (stream-name.ts).
 */
async function withStreamInUse(config: Config, nats: PrimaryNats, log: Logger): Promise<Config> {
  const given = settingGiven("streamName", process.argv.slice(2), process.env);
  const streamName = await streamNameInUse(nats.jsm, { given, name: config.streamName, subjectPrefix: config.subjectPrefix }, log);
  return streamName === config.streamName ? config : Object.freeze({ ...config, streamName });
}

/** The default stream's settings, then each namespace's stream's. */
function streamsOf(config: Config): StreamSection[] {
  const c = sectionsOf(config);
  return [c.stream, ...c.namespaces.list.map((ns) => ns.stream)];
}
