import type { ServerSection } from "../config/sections/index.js";
import { ListenGate, openFilesLimit, workerCap } from "../limits/listen-gate.js";
import type { GuardMetrics } from "../limits/metrics.js";
import type { Logger } from "../log.js";
import type { WorkerState } from "../metrics/worker-state.js";
import type { TemplatedApp } from "../uws.js";
import type { HandlerContext } from "./context.js";
import { WsEndpoint } from "./server.js";

/** A worker's WebSocket door on its app (and the TLS app, when there is one); its sockets and IP table in `state`. */
export function startWs(deps: Omit<HandlerContext, "subs" | "failures">, apps: { app: TemplatedApp; tlsApp?: TemplatedApp }, state: WorkerState): WsEndpoint {
  const ws = new WsEndpoint(apps.app, deps, apps.tlsApp ? [apps.tlsApp] : []);
  state.add({ ws_sockets: () => ws.sockets.size, ip_table_entries: () => deps.guard.admission.ipEntries });
  return ws;
}

/**
 * WORKER_MAX_CONNECTIONS: the worker's listeners close at its cap of connections (every door, as the guard's
 * admission counts them) and open again at the low-water mark. Returns the cap, or undefined without one.
 */
export function capListeners(
  server: Pick<ServerSection, "workerMaxConnections">,
  ws: WsEndpoint,
  guard: HandlerContext["guard"],
  metrics: GuardMetrics,
  log: Logger,
): ListenGate | undefined {
  const cap = workerCap(server.workerMaxConnections, openFilesLimit());
  if (cap === undefined) return undefined;
  const gate = new ListenGate(cap, { close: () => ws.pauseListening(), open: () => ws.resumeListening() }, (state, count) => {
    const full = state === "full";
    metrics.workersFull.set(full ? 1 : 0);
    if (full) metrics.capReached.inc();
    log.info({ connections: count, cap, lowWater: gate.lowWater }, full ? "connection cap reached: listeners closed" : "listening again");
  });
  guard.admission.watch((n) => gate.counted(n));
  return gate;
}
