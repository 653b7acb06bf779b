import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import type { Broker } from "./broker.js";
import { connectBroker } from "./connect.js";

/**
 * A worker's broker connection (`name`: its client name), with its metrics: live-feed repairs, direct gets by
 * path, the direct link's state, and the connection's state changes (logged and counted).
 */
export async function startWorkerBroker(
  c: Parameters<typeof connectBroker>[0],
  log: Logger,
  metrics: Metrics,
  o: { name: string; natsToken?: string },
): Promise<Broker> {
  const directVia = { link: metrics.directGets.labels("link"), main: metrics.directGets.labels("main") };
  const broker = await connectBroker(c, log, o.name, {
    onRepair: (why) => metrics.liveRepairs.labels(why).inc(),
    onDirectGet: (via) => directVia[via].inc(),
    natsToken: o.natsToken,
  });
  watchBroker(broker, metrics, log);
  metrics.directLink.up = () => broker.directLinkUp?.() ?? false;
  return broker;
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
