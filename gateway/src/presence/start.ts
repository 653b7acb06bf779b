import type { Broker } from "../broker/broker.js";
import type { PresenceSection } from "../config/sections/index.js";
import type { TopicPublisher } from "../fanout/socket.js";
import type { Logger } from "../log.js";
import type { WorkerState } from "../metrics/worker-state.js";
import { PresenceHub } from "./hub.js";
import { createPresenceMetrics } from "./metrics.js";

/**
 * A worker's presence, when its broker keeps one (JetStream): resynchronised after each reconnect, its tables
 * in `state`. Undefined otherwise.
 */
export function startPresence(
  config: PresenceSection,
  deps: { app: TopicPublisher; broker: Broker; log: Logger; lingerMs: number; state: WorkerState },
): PresenceHub | undefined {
  const { broker } = deps;
  const presence = broker.presence
    ? new PresenceHub({ app: deps.app, api: broker.presence, config, metrics: createPresenceMetrics(), log: deps.log, lingerMs: deps.lingerMs })
    : undefined;
  if (presence) broker.onEvent((e) => (e.type === "reconnected" ? presence.resync() : undefined));
  deps.state.add({
    presence_channels: () => presence?.sizes.channels ?? 0,
    presence_own: () => presence?.sizes.own ?? 0,
    presence_unremoved: () => presence?.sizes.unremoved ?? 0,
  });
  return presence;
}
