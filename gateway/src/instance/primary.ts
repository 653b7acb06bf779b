import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { StreamWatch } from "../broker/jetstream/stream-watch.js";
import { unknownSettings } from "../config/unknown-env.js";
import { SECRET_ENV } from "../config/secrets.js";
import { ensureStream, whileElecting } from "../broker/jetstream/stream.js";
import { ensurePresenceBucket, presenceStream } from "../broker/jetstream/presence.js";
import { formerNamesUsed, type Config } from "../config/config.js";
import { sectionsOf, type PresenceSection, type StreamSection } from "../config/sections/index.js";
import { createLogger, type Logger } from "../log.js";
import { freePort } from "../net.js";
import { loadUws, runtimeInfo } from "../uws.js";
import { authEnabled, loadKeyMaterial } from "../auth/keys.js";
import { loadApiKeys } from "../auth/api-keys.js";
import { tlsEnabled } from "../config/checks.js";
import { exposureWarnings } from "../config/exposure.js";
import { describeNatsSecurity, embeddedNatsSecurity, loadNatsSecurity, natsJsOptions, type NatsSecurity } from "../broker/jetstream/nats-security.js";
import { startAdmin } from "./admin.js";
import { InstanceMetrics } from "./instance-metrics.js";
import { startEmbeddedBrokers, type EmbeddedBrokers } from "./embedded.js";
import { WorkerPool } from "./pool.js";
import { adminControl } from "../control/admin-door.js";
import { AccessControl } from "../auth/access.js";
import { Authenticator } from "../auth/authenticator.js";
import { hooksOf } from "../auth/hooks.js";
import { natsBus } from "../broker/jetstream/bus.js";
import { effectiveSettings, type EffectiveSettings } from "../namespaces/settings.js";
import { hooksSummary } from "../auth/hooks-summary.js";
import { startEventsFeature, type EventsFeature } from "../events/start.js";
import { jetStreamEventsBroker, type JetStreamEventsBroker } from "../broker/jetstream/events-broker.js";
import { callbackFaults, guarded } from "../util/guarded.js";

/** The admin port in effect: `auto` is 9100 when authentication is on and none (-1) when it is off. */
export const adminPortOf = (c: Config): number => (c.adminPort === -2 ? (authEnabled(c) ? 9100 : -1) : c.adminPort);

/**
 * The primary, by concern: embedded broker supervision (embedded.ts), the stream, the worker pool
 * (pool.ts), metrics aggregation (instance-metrics.ts) and the admin listener (admin.ts), and a bounded
 * graceful shutdown.
 */
export async function runPrimary(config: Config): Promise<void> {
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

  const c = sectionsOf(config);
  // The streams' and namespaces' settings with every default filled in: logged once the streams are checked, and in /v1/stats.
  const settings = config.broker === "jetstream" ? effectiveSettings(c.stream, c.namespaces, c.events.kinds, c.fanout.coalesceMs) : undefined;
  const metrics = new InstanceMetrics(settings);
  let prepared: Awaited<ReturnType<typeof prepareStream>> | undefined;
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
    if (config.broker === "jetstream") prepared = await prepareStream(streamsOf(config), brokers.natsUrl, security, log, sectionsOf(config).presence);
    if (settings) logSettings(settings, log);
    if (prepared) {
      eventsBroker = jetStreamEventsBroker(prepared.nc, prepared.jsm, c.events, log);
      events = await startEventsFeature({ sections: c, broker: eventsBroker, registry: metrics.registry, log });
    }
    const adminPort = adminPortOf(config);
    if (adminPort >= 0) admin = await startAdmin(config.adminHost, adminPort, metrics, log, controlDoor(config, prepared?.nc, log));
  } catch (e) {
    return fail(e);
  }

  let stopWatch = async (): Promise<void> => undefined;
  const port = config.port === 0 ? await freePort(config.host) : config.port;
  const tlsPort = tlsEnabled(config) && config.tlsPort === 0 ? await freePort(config.host) : config.tlsPort;
  // Workers get every URL and port resolved; an admin listener means they keep metrics off the public port.
  const workerConfig: Config = Object.freeze({ ...config, natsUrl: brokers.natsUrl, redisUrl: brokers.redisUrl, port, tlsPort, adminPort: admin?.port ?? -1 });
  // Workers inherit the primary's environment: the secrets go to them over IPC instead (pool.ts).
  for (const name of SECRET_ENV) delete process.env[name];
  const pool = new WorkerPool(sectionsOf(config).server, workerConfig, metrics, log, (e) => void fail(e), brokers.natsToken);
  if (events?.shares) pool.shareWith(events.shares);
  await pool.start();
  if (prepared) {
    const w = new StreamWatch(prepared.jsm, streamsOf(config), prepared.presence, log, {
      repair: config.streamRepair === "repair",
      intervalMs: config.streamCheckIntervalMs,
      onChange: (drift) => pool.setDrift(drift),
      own: eventsBroker?.owned() ?? [],
    });
    w.start();
    // Between two looks, an update or deletion of a stream or a bucket is looked at when JetStream says so.
    const watched = [
      ...streamsOf(config).map((s) => s.name),
      ...(prepared.presence ? [presenceStream(prepared.presence.bucket)] : []),
      ...(eventsBroker?.owned() ?? []).map((o) => o.wanted.name),
    ];
    for (const name of watched)
      for (const what of ["UPDATED", "DELETED"])
        prepared.nc.subscribe(`$JS.EVENT.ADVISORY.STREAM.${what}.${name}`, { callback: guarded("stream advisory", () => void w.check()) });
    stopWatch = async () => {
      w.stop();
      await prepared?.close();
    };
  }
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
    await stopWatch();
    await admin?.close();
    await brokers?.stop(Math.max(deadline - Date.now() - 200, 100));
    log.info("stopped");
    process.exit(0);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/** The control plane's door on the admin listener: the same authorization chain as the workers', and the primary's NATS connection. */
function controlDoor(config: Config, nc: NatsConnection | undefined, log: Logger): ReturnType<typeof adminControl> {
  const c = sectionsOf(config);
  const hooks = hooksOf(c.hooks, log);
  return adminControl({
    access: new AccessControl(new Authenticator(c.auth), hooks, log),
    ...(nc ? { bus: natsBus(nc) } : {}),
    subjectPrefix: c.control.subjectPrefix,
    timeoutMs: c.control.timeoutMs,
    maxBodyBytes: c.server.publishBatchMaxBytes,
    log,
  });
}

/** The default stream's settings, and each namespace's: one line each, so that a grep for a namespace finds its line. */
function logSettings(s: EffectiveSettings, log: Logger): void {
  log.info(s.defaultStream, "default stream settings");
  for (const ns of s.namespaces) {
    const { name, ...rest } = ns;
    log.info({ namespace: name, ...rest }, "namespace settings");
  }
}

/** The default stream's settings, then each namespace's stream's. */
function streamsOf(config: Config): StreamSection[] {
  const c = sectionsOf(config);
  return [c.stream, ...c.namespaces.list.map((ns) => ns.stream)];
}

/**
 * Connects, ensures the streams (the default one, each namespace's; and the presence bucket) exist with the configured settings, and keeps the
 * connection for the StreamWatch that looks after them from then on (the bucket only if it could be made).
 */
async function prepareStream(
  streams: readonly StreamSection[],
  servers: string[],
  security: NatsSecurity,
  log: Logger,
  presence: PresenceSection,
): Promise<{ nc: NatsConnection; jsm: JetStreamManager; presence?: PresenceSection; close(): Promise<void> }> {
  log.info({ servers, ...describeNatsSecurity(security) }, "connecting to NATS");
  const nc = await connect({
    servers,
    name: "fanout-gateway-primary",
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    ...natsJsOptions(security),
  });
  try {
    const jsm = await whileElecting("JetStream", log, () => jetstreamManager(nc));
    for (const stream of streams) await whileElecting(`stream ${stream.name}`, log, () => ensureStream(jsm, stream, log));
    // Presence is one feature, not the gateway: a server without per-message TTL (before 2.11) refuses the
    // bucket, and everything else still works (presence requests then fail with broker_error). A failure
    // that may pass (a timeout while a fresh cluster elects leaders) is tried again first.
    const bucket = await ensurePresenceBucket(jsm, presence, log).then(
      () => true,
      (e: unknown) => {
        log.error({ err: e, bucket: presence.bucket }, "presence bucket could not be created (nats-server 2.11+ is needed): presence is unavailable");
        return false;
      },
    );
    return { nc, jsm, ...(bucket ? { presence } : {}), close: () => nc.close() };
  } catch (e) {
    await nc.close();
    throw e;
  }
}
