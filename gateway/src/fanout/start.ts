import type { Broker } from "../broker/broker.js";
import type { Sections } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import type { WorkerState } from "../metrics/worker-state.js";
import { coalesceMaxBytes, windowOf } from "./coalesced-frames.js";
import { FanoutHub } from "./hub.js";
import { Resume } from "./resume.js";
import type { TopicPublisher } from "./socket.js";

/** The worker's live delivery: its hub (feeds, coalescing, deltas, replay cache) and the resume path of every door. */
export type Fanout = { hub: FanoutHub; resume: Resume };

/** Starts a worker's fan-out from its sections; `app`: the uWS topics of its apps. Its tables join `state`. */
export function startFanout(
  c: Pick<Sections, "fanout" | "namespaces" | "backpressure" | "server" | "deltas">,
  deps: { app: TopicPublisher; broker: Broker; metrics: Metrics; log: Logger; state: WorkerState },
): Fanout {
  const { metrics, log } = deps;
  const hub = new FanoutHub({
    app: deps.app,
    broker: deps.broker,
    metrics,
    log,
    lingerMs: c.fanout.lingerMs,
    replayCacheBytes: c.fanout.replayCacheBytes,
    compress: c.server.compression !== "off",
    coalesce: { windowOf: windowOf(c.namespaces, c.fanout.coalesceMs), maxBytes: coalesceMaxBytes(c.backpressure.bytes) },
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
  deps.state.add({
    hub_feeds: () => hub.size,
    replay_cache_pages: () => hub.pages?.stats().pages ?? 0,
    replay_cache_bytes: () => hub.pages?.stats().bytes ?? 0,
  });
  return { hub, resume };
}
