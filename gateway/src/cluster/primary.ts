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
import { ClusterMetrics } from "./cluster-metrics.js";
import { startEmbeddedBrokers, type EmbeddedBrokers } from "./embedded.js";
import { WorkerPool } from "./pool.js";
import { adminControl } from "../control/admin-door.js";
import { AccessControl } from "../auth/access.js";
import { Authenticator } from "../auth/authenticator.js";
import { hooksOf } from "../auth/hooks.js";
import { natsBus } from "../broker/jetstream/bus.js";
import { readFileSync } from "node:fs";
import { jetstream } from "@nats-io/jetstream";
import { ensureEventsStream, WEBHOOK_DURABLE, webhookSource } from "../broker/jetstream/events-stream.js";
import { BackendCaller } from "../backend/caller.js";
import { backendMetrics } from "../backend/metrics.js";
import { SENDER_HEADER, WebhookSender, webhookSecrets } from "../events/webhook.js";
import { SenderLease, senderTimings } from "../events/lease.js";
import { webhookLeaseStore } from "../broker/jetstream/webhook-lease.js";
import { hostname } from "node:os";
import { webhookMetrics } from "../events/metrics.js";
import type { EventsSection } from "../config/sections/index.js";
import { randomBytes } from "node:crypto";
import client from "prom-client";
import { JetStreamSharedState, ensureSharedState } from "../broker/jetstream/shared-state.js";
import { Announcer } from "../events/announcer.js";
import { EventRecorder } from "../events/recorder.js";
import { InstanceShares } from "../events/shares.js";
import { Services } from "../services/services.js";
import { effectiveSettings, type EffectiveSettings } from "../namespaces/settings.js";
import { hooksSummary } from "../auth/hooks-summary.js";
import { callbackFaults, guarded } from "../util/guarded.js";

/** The admin port in effect: `auto` is 9100 when authentication is on and none (-1) when it is off. */
export const adminPortOf = (c: Config): number => (c.adminPort === -2 ? (authEnabled(c) ? 9100 : -1) : c.adminPort);

/**
 * The primary, by concern: embedded broker supervision (embedded.ts), the stream, the worker pool
 * (pool.ts), metrics aggregation (cluster-metrics.ts) and the admin listener (admin.ts), and a bounded
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
  const metrics = new ClusterMetrics(settings);
  let prepared: Awaited<ReturnType<typeof prepareStream>> | undefined;
  let admin: { port: number; close(): Promise<void> } | undefined;
  let webhook: WebhookSender | undefined;
  let services: { services: Services; shares: InstanceShares } | undefined;
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
    if (prepared && sectionsOf(config).events.kinds.length > 0) webhook = await startEvents(sectionsOf(config).events, prepared, metrics, log);
    if (prepared && sharedKinds(sectionsOf(config).events)) services = await startServices(sectionsOf(config), prepared.nc, metrics, log);
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
  if (services) pool.shareWith(services.shares);
  await pool.start();
  if (prepared) {
    const w = new StreamWatch(prepared.jsm, streamsOf(config), prepared.presence, log, {
      repair: config.streamRepair === "repair",
      intervalMs: config.streamCheckIntervalMs,
      onChange: (drift) => pool.setDrift(drift),
    });
    w.start();
    // Between two looks, an update or deletion of the stream or the bucket is looked at when JetStream says so.
    const watched = [...streamsOf(config).map((s) => s.name), ...(prepared.presence ? [presenceStream(prepared.presence.bucket)] : [])];
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
    await webhook?.stop();
    // The leader drops this instance's shares with its heartbeat (the workers' last reports are not waited for).
    await services?.services.stop();
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

/**
 * The events stream, made before any worker records in it; and with EVENTS_WEBHOOK_URL, this instance's
 * webhook sender: every instance runs one, and the durable consumer they share hands each event to one.
 */
async function startEvents(
  c: EventsSection,
  prepared: { nc: NatsConnection; jsm: JetStreamManager },
  metrics: ClusterMetrics,
  log: Logger,
): Promise<WebhookSender | undefined> {
  await whileElecting(`stream ${c.stream}`, log, () => ensureEventsStream(prepared.jsm, c, log));
  const w = c.webhook;
  if (!w.url) return undefined;
  const secrets = w.secretFile ? webhookSecrets(readFileSync(w.secretFile, "utf8"), w.secretFile) : [];
  const timings = senderTimings(w);
  const js = jetstream(prepared.nc);
  const source = await webhookSource(js, prepared.jsm, c, {
    durable: WEBHOOK_DURABLE,
    maxAckPending: w.batch * w.concurrency,
    ackWaitMs: timings.ackWaitMs,
  });
  const holder = `${hostname()}/${process.pid}`;
  const store = timings.ordered
    ? await whileElecting("webhook lease stream", log, () => webhookLeaseStore(js, prepared.jsm, c, timings.leaseMs, log))
    : undefined;
  const lease = store ? new SenderLease(store, holder, timings.holdMs) : undefined;
  const caller = new BackendCaller(
    // Only the status acknowledges a batch: the receiver's body is dropped unread, whatever its size.
    { timeoutMs: w.timeoutMs, maxInFlight: w.concurrency, maxAnswerBytes: 0, headers: { [SENDER_HEADER]: holder }, ...(secrets.length > 0 ? { secrets } : {}) },
    log,
    backendMetrics(metrics.registry, "webhook"),
  );
  const sending = () => sender.state().sending;
  const sender: WebhookSender = new WebhookSender(source, caller, w, timings, log, webhookMetrics(metrics.registry, source, sending), lease);
  sender.start();
  log.info({ url: w.url, kinds: c.kinds, signed: secrets.length, ordered: timings.ordered, takeoverMs: w.takeoverMs }, "events webhook sender started");
  return sender;
}

/** Whether a cluster-wide kind is on (channel.occupied, channel.vacated, presence.join, presence.leave): then the services run. */
const sharedKinds = (c: EventsSection): boolean => c.kinds.some((k) => k.startsWith("channel.") || k.startsWith("presence."));

/**
 * The primary's services beside the workers (services/): this instance's share of the cluster's channels
 * and users (every instance), and the announcer of their transitions (the leader only). Started before
 * the workers: the heartbeat is written before any share.
 */
async function startServices(
  c: ReturnType<typeof sectionsOf>,
  nc: NatsConnection,
  metrics: ClusterMetrics,
  log: Logger,
): Promise<{ services: Services; shares: InstanceShares } | undefined> {
  const e = c.events;
  const settings = { bucket: e.stateBucket, ttlMs: e.instanceTtlMs, replicas: e.replicas, storage: c.presence.storage };
  // As presence: a server without per-message TTL (before 2.11) refuses the bucket, and the rest still works.
  const made = await ensureSharedState(await jetstreamManager(nc), settings, log).then(
    () => true,
    (err: unknown) => {
      log.error(
        { err, bucket: e.stateBucket },
        "the cluster's state bucket could not be created (nats-server 2.11+ is needed): no channel.occupied, channel.vacated, nor identified users' presence.join and presence.leave",
      );
      return false;
    },
  );
  if (!made) return undefined;
  const state = await JetStreamSharedState.connect(nc, settings);
  const instance = randomBytes(8).toString("hex");
  const js = jetstream(nc);
  // Its own registry: the leader retries what failed (recordOnce), so it counts nothing in fanout_events_failed_total, the workers' metric.
  const append = async (subject: string, json: string, msgID?: string) => (await js.publish(subject, json, msgID ? { msgID } : {})).seq;
  const recorder = new EventRecorder(e, append, log, new client.Registry(), c.namespaces);
  const shares = new InstanceShares(state, instance, log);
  // Renewed every third of the TTL: held while the last renewal is under 3/4 of it old (one renewal may fail),
  // so a leader cut off stops before the lease runs out for the others.
  const lease = new SenderLease(state.leaderLease(), instance, Math.floor(e.instanceTtlMs * 0.75));
  const services = new Services(state, lease, instance, e.instanceTtlMs, [shares], [new Announcer(state, recorder, e.debounceMs, log)], log, metrics.registry);
  await services.start();
  log.info({ instance, bucket: e.stateBucket, debounceMs: e.debounceMs, leader: services.leader }, "cluster-wide events started");
  return { services, shares };
}
