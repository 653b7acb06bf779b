import cluster from "node:cluster";
import type { Broker } from "../broker/broker.js";
import { connectBroker } from "../broker/connect.js";
import type { Config } from "../config/config.js";
import { FanoutHub } from "../fanout/hub.js";
import { coalesceMaxBytes, windowOf } from "../fanout/coalesced-frames.js";
import { Resume } from "../fanout/resume.js";
import { registerHttpRoutes } from "../http/routes.js";
import { createLogger, type Logger } from "../log.js";
import { createMetrics, type Metrics } from "../metrics/metrics.js";
import { callbackFaults } from "../util/guarded.js";
import { loadUws } from "../uws.js";
import { WsEndpoint } from "../ws/server.js";
import { createTlsApp, topicsOf } from "../ws/tls.js";
import { Authenticator } from "../auth/authenticator.js";
import { ConnectionGuard } from "../ws/guard.js";
import { hooksOf } from "../auth/hooks.js";
import { AccessControl } from "../auth/access.js";
import { createGuardMetrics } from "../limits/metrics.js";
import { isFgwMessage, type ToPrimary, type ToWorker } from "./ipc.js";
import { answerScrapes } from "./cluster-metrics.js";
import { CloseCode } from "../protocol/codes.js";
import { sectionsOf, type EventsSection } from "../config/sections/index.js";
import { EventRecorder } from "../events/recorder.js";
import { ShareTally } from "../events/tally.js";
import { PublishService } from "../publish/service.js";
import { SseEndpoint } from "../sse/endpoint.js";
import { PresenceHub } from "../presence/hub.js";
import { createPresenceMetrics } from "../presence/metrics.js";
import { readLimiterFor } from "../limits/read-limits.js";
import { publishLimiterFor } from "../limits/publish-limits.js";
import { hostname } from "node:os";
import { LocalControl } from "../control/local.js";
import { RpcHook } from "../rpc/hook.js";
import { ControlService } from "../control/service.js";
import { registerControlRoutes } from "../control/http.js";
import { registerWorkerState } from "../metrics/worker-state.js";
import type { NamespacesSection } from "../namespaces/namespace.js";
import { InFlight } from "../util/in-flight.js";

/**
 * A worker: one uWS app on the shared port (SO_REUSEPORT), one broker connection, one fan-out hub. `slot`: its
 * number, 1..WORKERS (the `worker` of its log lines and of /v1/stats), kept by the worker restarted in its place.
 */
export async function runWorker(config: Config, natsToken?: string, slot = cluster.worker?.id ?? 0): Promise<void> {
  const c = sectionsOf(config);
  const log = createLogger(c.log.level, { role: "worker", worker: slot });
  const uws = loadUws(c.server.uwsModule); // ws/ and the TLS app get this module from loadUws() too
  answerScrapes(); // the primary scrapes each worker's registry over IPC
  const metrics = createMetrics();
  callbackFaults.attach(log, metrics.callbackFailures);
  let draining = false;
  /** Whether every worker of the instance listens (the primary says): /readyz answers 503 until then. */
  let allReady = false;
  /** What of the stream's setup has drifted (the primary's StreamWatch says); /readyz answers 503 while any. */
  let drift: readonly string[] = [];
  const isDraining = () => draining;
  const auth = new Authenticator(c.auth); // key material is read here, once
  const hooks = hooksOf(c.hooks, log);
  const guardMetrics = createGuardMetrics();
  const access = new AccessControl(auth, hooks, log, c.namespaces);
  const guard = new ConnectionGuard(c.limits, c.auth, access, guardMetrics, log);

  const directVia = { link: metrics.directGets.labels("link"), main: metrics.directGets.labels("main") };
  const broker = await connectBroker(c, log, `fanout-gateway-worker-${slot}`, {
    onRepair: (why) => metrics.liveRepairs.labels(why).inc(),
    onDirectGet: (via) => directVia[via].inc(),
    natsToken,
  });
  watchBroker(broker, metrics, log);
  metrics.directLink.up = () => broker.directLinkUp?.() ?? false;

  const app = uws.App();
  const tlsApp = createTlsApp(c.server);
  const apps = tlsApp ? [app, tlsApp] : [app];
  const coalesce = { windowOf: windowOf(c.namespaces, c.fanout.coalesceMs), maxBytes: coalesceMaxBytes(c.backpressure.bytes) };
  const compress = c.server.compression !== "off";
  const hub = new FanoutHub({
    app: topicsOf(apps),
    broker,
    metrics,
    log,
    lingerMs: c.fanout.lingerMs,
    replayCacheBytes: c.fanout.replayCacheBytes,
    compress,
    coalesce,
    deltas: c.deltas,
  });
  const resume = new Resume(
    hub,
    {
      holdLimit: c.fanout.holdMessages,
      holdBytes: c.fanout.holdBytes,
      deadlineMs: c.fanout.catchupDeadlineMs,
      retryForMs: c.fanout.catchupRetryForMs,
      backpressureBytes: c.backpressure.bytes,
    },
    log,
    metrics.deliveriesDropped,
  );
  const publisher = new PublishService(c.server.maxPayloadBytes, broker, metrics, log, hooks?.publishEnabled ? hooks : undefined);
  const presence = broker.presence
    ? new PresenceHub({ app: topicsOf(apps), api: broker.presence, config: c.presence, metrics: createPresenceMetrics(), log, lingerMs: c.fanout.lingerMs })
    : undefined;
  if (presence) broker.onEvent((e) => (e.type === "reconnected" ? presence.resync() : undefined));
  // The events being stored: a drain waits for their acknowledgements before it closes the NATS connection.
  const storing = new InFlight();
  const events = eventRecorderOf(c.events, broker, log, c.namespaces, storing);
  const rpc = c.hooks.rpcUrl ? new RpcHook(c.hooks, log) : undefined;
  const ws = new WsEndpoint(app, { config: c, broker, hub, resume, metrics, log, isDraining, guard, publisher, presence, events, rpc }, tlsApp ? [tlsApp] : []);
  // A recreated stream numbers its messages from 1 again: every position in it is void. Sockets subscribed to
  // one of its patterns are closed with 1012 and resume with their seq and its epoch, which the new stream
  // answers with epochChanged; those of other streams (namespaces) keep going.
  broker.onEvent((e) => {
    if (e.type !== "epoch") return;
    hub.streamRecreated(e.stream);
    const inStream = (pattern: string): boolean => {
      try {
        return (broker.replay?.streamOf?.(pattern).name ?? e.stream) === e.stream;
      } catch {
        return true;
      }
    };
    ws.endAll(CloseCode.StreamRecreated, "stream recreated: reconnect and resume", inStream);
    sse.endAll(inStream);
  });
  const askPrimary = metricsClient();
  const clusterMetrics = () => askPrimary("prometheus");
  const clusterStats = () => askPrimary("stats").then((m) => m.text);
  // Reads of stored messages (HTTP history, SSE opens) per IP and user; one allowance for both doors.
  const reads = readLimiterFor(c.reads, guardMetrics.readRefused);
  // Server-Sent Events streams: registered before the HTTP routes' catch-alls.
  const sse = new SseEndpoint({ config: c, broker, hub, resume, access, admission: guard.admission, metrics, log, isDraining, reads, events });
  for (const a of apps) sse.register(a);
  sse.start();
  const history = { broker, maxBytes: c.reads.historyMaxBytes, reads };
  const publishLimits = publishLimiterFor(c.limits.publish, guardMetrics.publishRefused);
  // The control plane: this worker's part of every operation, and a door for backends on NATS.
  const control = new ControlService({
    broker,
    requests: metrics.controlRequests,
    local: new LocalControl(ws, sse, hub),
    publisher,
    access,
    config: { ...c.control, maxChannels: c.server.publishBatchMaxItems },
    ...(c.events.webhook.url ? { eventsStream: c.events.stream } : {}),
    self: { instance: `${hostname()}:${process.ppid}`, worker: slot, workers: c.server.workers },
    log,
  });
  control.start();
  // Its HTTP door is on the public port only when there is no admin listener (the primary's, which has it then).
  if (c.server.adminPort < 0) for (const a of apps) registerControlRoutes(a, { service: control, access, maxBodyBytes: c.server.publishBatchMaxBytes });
  // Each worker's tables by size, read through their owners' getters at each scrape (soak runs watch them).
  registerWorkerState(
    {
      ws_sockets: () => ws.sockets.size,
      sse_streams: () => sse.streams.size,
      hub_feeds: () => hub.size,
      replay_cache_pages: () => hub.pages?.stats().pages ?? 0,
      replay_cache_bytes: () => hub.pages?.stats().bytes ?? 0,
      presence_channels: () => presence?.sizes.channels ?? 0,
      presence_own: () => presence?.sizes.own ?? 0,
      presence_unremoved: () => presence?.sizes.unremoved ?? 0,
      ip_table_entries: () => guard.admission.ipEntries,
      read_limit_ips: () => reads?.size.ips ?? 0,
      read_limit_users: () => reads?.size.users ?? 0,
      publish_limit_entries: () => publishLimits?.size ?? 0,
      hook_cache_connect: () => hooks?.cacheSizes.connect ?? 0,
      hook_cache_subscribe: () => hooks?.cacheSizes.subscribe ?? 0,
    },
    { worker: slot, pid: process.pid },
  );
  for (const a of apps)
    registerHttpRoutes(a, {
      config: c.server,
      broker,
      metrics,
      log,
      isDraining,
      access,
      clusterMetrics,
      clusterStats,
      publisher,
      presence,
      history,
      publishLimits,
      streamDrift: () => drift,
      allWorkersReady: () => allReady,
      allowsOrigin: (origin, host) => guard.admission.allowsOrigin(origin, host),
    });
  await ws.listen(c.server.host, c.server.port);
  if (tlsApp) await ws.listenExtra(tlsApp, c.server.host, c.server.tlsPort);
  // Logged before the primary hears of it: nothing can call the instance ready before this line exists.
  log.info({ port: c.server.port }, "worker ready");
  send({ type: "fgw:listening", port: c.server.port });

  const shutdown = async (why: string): Promise<void> => {
    if (draining) return;
    draining = true;
    log.info({ why, sockets: ws.sockets.size }, "worker draining");
    ws.stopListening();
    // Each socket closed records its unsubscribes and disconnect: they are stored (acknowledged) before the
    // connection drains, which would cut the acknowledgements on their way (bounded: half the drain's time).
    ws.closeAll();
    sse.stop();
    presence?.stopAll();
    const eventsMs = Math.max(c.server.shutdownTimeoutMs / 2, 100);
    if (!(await storing.settled(eventsMs))) log.warn({ events: storing.size, waitedMs: eventsMs }, "events still unacknowledged at the drain's bound");
    await hub.stopAll();
    await broker.close();
    process.exit(0);
  };
  process.on("message", (m: unknown) => {
    if (isFgwMessage(m) && (m as ToWorker).type === "fgw:shutdown") void shutdown("primary asked");
    if (isFgwMessage(m) && (m as ToWorker).type === "fgw:all-ready") allReady = true;
    if (isFgwMessage(m) && (m as ToWorker).type === "fgw:drift") {
      drift = (m as ToWorker & { type: "fgw:drift" }).drift;
      metrics.streamDrift.reset();
      for (const what of drift) metrics.streamDrift.labels(what).set(1);
    }
  });
  // The primary is gone (killed): do not linger as an orphan.
  process.on("disconnect", () => void shutdown("primary disconnected"));
  // Signals go to the whole process group; the primary coordinates the drain.
  process.on("SIGTERM", () => undefined);
  process.on("SIGINT", () => undefined);
}

/** The recorder of connection and subscription events, when EVENTS turns any kind on (JetStream only: a start check). */
function eventRecorderOf(c: EventsSection, broker: Broker, log: Logger, namespaces: NamespacesSection, storing: InFlight): EventRecorder | undefined {
  const appendEvent = broker.appendEvent?.bind(broker);
  const append = appendEvent ? (subject: string, json: string) => storing.track(appendEvent(subject, json)) : undefined;
  // The worker's channels and users go to its primary, which keeps the instance's share in the cluster's state.
  const tally = new ShareTally((key, held) => {
    if (process.connected) send({ type: "fgw:share", key, held });
  });
  return c.kinds.length > 0 && append ? new EventRecorder(c, append, log, undefined, namespaces, tally) : undefined;
}

function watchBroker(broker: Broker, metrics: Metrics, log: Logger): void {
  metrics.brokerConnected.set(broker.isConnected() ? 1 : 0);
  broker.onEvent((e) => {
    if (e.type === "disconnected") {
      metrics.brokerConnected.set(0);
      log.warn("broker disconnected");
    } else if (e.type === "reconnected") {
      metrics.brokerConnected.set(1);
      metrics.brokerReconnects.inc();
      log.info("broker reconnected");
    } else if (e.type === "error") {
      log.warn({ err: e.error }, "broker error");
    }
  });
}

function send(m: ToPrimary): void {
  process.send?.(m);
}

/**
 * Asks the primary for the metrics of all workers, aggregated, or for the `/v1/stats` body (one IPC
 * exchange; concurrent requests share a scrape). Made by runWorker: nothing is registered at import time.
 */
function metricsClient(): (what: "prometheus" | "stats") => Promise<{ text: string; contentType: string }> {
  let next = 0;
  const pending = new Map<number, (m: ToWorker & { type: "fgw:metrics-res" }) => void>();
  process.on("message", (m: unknown) => {
    if (!isFgwMessage(m) || (m as ToWorker).type !== "fgw:metrics-res") return;
    const r = m as ToWorker & { type: "fgw:metrics-res" };
    pending.get(r.id)?.(r);
    pending.delete(r.id);
  });
  return (what) => {
    const id = ++next;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        pending.delete(id);
        reject(new Error("primary did not answer in 6 s"));
      }, 6_000);
      pending.set(id, (r) => {
        clearTimeout(t);
        if (r.error || r.text === undefined) reject(new Error(r.error ?? "no metrics"));
        else resolve({ text: r.text, contentType: r.contentType ?? "text/plain" });
      });
      send({ type: "fgw:metrics-req", id, what });
    });
  };
}
