import { hostname } from "node:os";
import type { TemplatedApp } from "../uws.js";
import type { AccessControl } from "../auth/access.js";
import type { Broker } from "../broker/broker.js";
import type { Sections } from "../config/sections/index.js";
import type { FanoutHub } from "../fanout/hub.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import type { PublishService } from "../publish/service.js";
import type { SseEndpoint } from "../sse/endpoint.js";
import type { WsEndpoint } from "../ws/server.js";
import { registerControlRoutes } from "./http.js";
import { LocalControl } from "./local.js";
import { ControlService } from "./service.js";

/**
 * The control plane of a worker: its part of every operation, and a door for backends on NATS; its HTTP door
 * is on the public port only when there is no admin listener (the primary's, which has it then).
 */
export function startControl(
  c: Pick<Sections, "control" | "server" | "events">,
  d: {
    apps: readonly TemplatedApp[];
    broker: Broker;
    metrics: Metrics;
    log: Logger;
    ws: WsEndpoint;
    sse: SseEndpoint;
    hub: FanoutHub;
    publisher: PublishService;
    access: AccessControl;
    /** The worker's number, 1..WORKERS. */
    slot: number;
  },
): ControlService {
  const control = new ControlService({
    broker: d.broker,
    requests: d.metrics.controlRequests,
    local: new LocalControl(d.ws.users, d.sse, d.hub),
    publisher: d.publisher,
    access: d.access,
    config: { ...c.control, maxChannels: c.server.publishBatchMaxItems },
    ...(c.events.webhook.url ? { eventsStream: c.events.stream } : {}),
    self: { instance: `${hostname()}:${process.ppid}`, worker: d.slot, workers: c.server.workers },
    log: d.log,
  });
  control.start();
  if (c.server.adminPort < 0)
    for (const a of d.apps) registerControlRoutes(a, { service: control, access: d.access, maxBodyBytes: c.server.publishBatchMaxBytes });
  return control;
}
