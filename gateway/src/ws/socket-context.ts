import { BackpressureMonitor } from "./backpressure.js";
import type { HandlerContext } from "./context.js";
import type { Socket } from "./session.js";
import { Subscriptions } from "./subscriptions.js";
import { WarnEvery } from "../util/warn-every.js";

/** What a door is given: everything of the handlers' context but the pieces built here. */
export type DoorDeps = Omit<HandlerContext, "subs" | "failures">;

/** The sessions' context for a door, and the backpressure monitor that watches its sockets. */
export type SocketContext = { ctx: HandlerContext; backpressure: BackpressureMonitor };

/**
 * The sessions' context for a door (/ws, /connection/websocket): its subscriptions (the shared resume
 * path, the hub, backpressure settings, events), the failure log, and the backpressure monitor over
 * `sockets` that closes the slow ones. Every WebSocket door builds it here, so a new door cannot forget a
 * piece.
 */
export function socketContext(sockets: Set<Socket>, deps: DoorDeps): SocketContext {
  const lifecycle = { resume: deps.resume, connected: () => deps.broker.isConnected(), log: deps.log };
  const subs = new Subscriptions({
    lifecycle,
    hub: deps.hub,
    backpressure: deps.config.backpressure,
    metrics: deps.metrics,
    log: deps.log,
    onSlow: (ws) => backpressure.closeSlow(ws),
    events: deps.events,
  });
  const backpressure = new BackpressureMonitor(sockets, subs, deps.config.backpressure, deps.log);
  return { ctx: { ...deps, subs, failures: new WarnEvery(deps.log, 60_000, "op", "error") }, backpressure };
}
