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
