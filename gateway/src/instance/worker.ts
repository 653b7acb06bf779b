import cluster from "node:cluster";
import { startAccess } from "../auth/start.js";
import { startWorkerBroker } from "../broker/start.js";
import type { Config } from "../config/config.js";
import { sectionsOf } from "../config/sections/index.js";
import { startCentrifugoApi } from "../centrifugo/start.js";
import { startCentrifugeClients } from "../centrifugo/client/start.js";
import { startControl } from "../control/start.js";
import { startWorkerEvents } from "../events/worker.js";
import { startFanout } from "../fanout/start.js";
import { startHttp } from "../http/start.js";
import { createGuardMetrics } from "../limits/metrics.js";
import { readLimiterFor } from "../limits/read-limits.js";
import { createLogger } from "../log.js";
import { createMetrics } from "../metrics/metrics.js";
import { registerWorkerState } from "../metrics/worker-state.js";
import { startPresence } from "../presence/start.js";
import { PublishService } from "../publish/service.js";
import { startRpc } from "../rpc/start.js";
import { startSse } from "../sse/start.js";
import { callbackFaults } from "../util/guarded.js";
import { loadUws } from "../uws.js";
import { ConnectionGuard } from "../ws/guard.js";
import { capListeners, startWs } from "../ws/start.js";
import { createTlsApp, topicsOf } from "../ws/tls.js";
import { answerScrapes } from "./instance-metrics.js";
import { endOnRecreatedStream } from "./recreated-stream.js";
import { InstanceState, listenToPrimary, metricsClient, send } from "./worker-ipc.js";

/**
 * A worker: one uWS app on the shared port (SO_REUSEPORT), one broker connection, one fan-out hub. `slot`: its
 * number, 1..WORKERS (the `worker` of its log lines and of /v1/stats), kept by the worker restarted in its place.
 * Each feature starts in its own module (`<feature>/start.ts`) and adds its tables to the worker's state; this
 * function only composes them, in the order they depend on each other, and drains them in reverse.
 */
export async function runWorker(config: Config, natsToken?: string, slot = cluster.worker?.id ?? 0): Promise<void> {
  const c = sectionsOf(config);
  const log = createLogger(c.log.level, { role: "worker", worker: slot });
  const uws = loadUws(c.server.uwsModule); // ws/ and the TLS app get this module from loadUws() too
  answerScrapes(); // the primary scrapes each worker's registry over IPC
  const metrics = createMetrics();
  callbackFaults.attach(log, metrics.callbackFailures);
  const state = registerWorkerState({ worker: slot, pid: process.pid });
  const instance = new InstanceState(metrics);
  let draining = false;
  const isDraining = () => draining;
  const { access, hooks } = startAccess(c, log, state);
  const guardMetrics = createGuardMetrics();
  const guard = new ConnectionGuard(c.limits, c.auth, access, guardMetrics, log);

  const broker = await startWorkerBroker(c, log, metrics, { name: `fanout-gateway-worker-${slot}`, natsToken });
  const app = uws.App();
  const tlsApp = createTlsApp(c.server);
  const apps = tlsApp ? [app, tlsApp] : [app];
  const { hub, resume } = startFanout(c, { app: topicsOf(apps), broker, metrics, log, state });
  const publisher = new PublishService(c.server.maxPayloadBytes, broker, metrics, log, hooks?.publishEnabled ? hooks : undefined);
  const presence = startPresence(c.presence, { app: topicsOf(apps), broker, log, lingerMs: c.fanout.lingerMs, state });
  const events = startWorkerEvents(c.events, { broker, log, namespaces: c.namespaces, share: shareWithPrimary });
  const rpc = startRpc(c.hooks, log);
  const doorDeps = { config: c, broker, hub, resume, metrics, log, isDraining, events: events.recorder };
  const ws = startWs({ ...doorDeps, guard, publisher, presence, rpc }, { app, ...(tlsApp ? { tlsApp } : {}) }, state);
  // Reads of stored messages (HTTP history, SSE opens) per IP and user; one allowance for both doors.
  const reads = readLimiterFor(c.reads, guardMetrics.readRefused);
  const sse = startSse({ ...doorDeps, access, admission: guard.admission, reads }, apps, state);
  const control = startControl(c, { apps, broker, metrics, log, ws, sse, hub, publisher, access, slot });
  const askPrimary = metricsClient();
  const { publishLimits } = startHttp(
    c,
    apps,
    {
      broker,
      metrics,
      log,
      isDraining,
      access,
      clusterMetrics: () => askPrimary("prometheus"),
      clusterStats: () => askPrimary("stats").then((m) => m.text),
      publisher,
      presence,
      streamDrift: () => instance.drift,
      allWorkersReady: () => instance.allReady,
      allowsOrigin: (origin, host) => guard.admission.allowsOrigin(origin, host),
    },
    { reads, guardMetrics, state },
  );
  const instanceStats = () => askPrimary("stats").then((m) => m.text);
  const serverApi = startCentrifugoApi(c, apps, { access, publisher, broker, control, presence, publishLimits, reads, instanceStats, metrics, log });
  const centrifuge = startCentrifugeClients(
    apps,
    { ...doorDeps, guard, publisher, presence, rpc },
    serverApi.d,
    { pingIntervalMs: c.server.centrifugePingMs, connectTimeoutMs: c.server.centrifugeConnectTimeoutMs },
    state,
  );
  endOnRecreatedStream(broker, hub, { ws, sse, centrifuge });
  const gate = capListeners(c.server, ws, guard, guardMetrics, log);
  await ws.listen(c.server.host, c.server.port);
  if (tlsApp) await ws.listenExtra(tlsApp, c.server.host, c.server.tlsPort);
  centrifuge.start();
  // Logged before the primary hears of it: nothing can call the instance ready before this line exists.
  log.info({ port: c.server.port, connectionCap: gate?.cap ?? "off" }, "worker ready");
  send({ type: "fgw:listening", port: c.server.port });

  const shutdown = async (why: string): Promise<void> => {
    if (draining) return;
    draining = true;
    gate?.stop();
    log.info({ why, sockets: ws.sockets.size }, "worker draining");
    ws.stopListening();
    // Each socket closed records its unsubscribes and disconnect: they are stored (acknowledged) before the
    // connection drains, which would cut the acknowledgements on their way (bounded: half the drain's time).
    ws.closeAll();
    centrifuge.closeAll();
    sse.stop();
    presence?.stopAll();
    await events.settled(Math.max(c.server.shutdownTimeoutMs / 2, 100));
    await hub.stopAll();
    await broker.close();
    process.exit(0);
  };
  listenToPrimary(instance, (why) => void shutdown(why));
}

/** The worker's channels and users go to its primary, which keeps the instance's share in the cluster's state. */
function shareWithPrimary(key: string, held: boolean): void {
  if (process.connected) send({ type: "fgw:share", key, held });
}
