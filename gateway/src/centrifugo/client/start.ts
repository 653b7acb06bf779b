import type { WorkerState } from "../../metrics/worker-state.js";
import type { TemplatedApp } from "../../uws.js";
import type { HandlerContext } from "../../ws/handlers.js";
import type { ServerApiDeps } from "../context.js";
import type { DoorSettings } from "./dispatch.js";
import { CentrifugeEndpoint } from "./endpoint.js";

/** The Centrifuge client protocol's door on the worker's apps (`/connection/websocket`); its sockets in `state`. */
export function startCentrifugeClients(
  apps: readonly TemplatedApp[],
  deps: Omit<HandlerContext, "subs" | "failures">,
  reads: ServerApiDeps,
  settings: DoorSettings,
  state: WorkerState,
): CentrifugeEndpoint {
  const door = new CentrifugeEndpoint(apps, deps, reads, settings);
  state.add({ centrifuge_sockets: () => door.sockets.size });
  reads.control.addDoor(door.users);
  return door;
}
