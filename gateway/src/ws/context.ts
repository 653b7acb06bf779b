import type { Broker } from "../broker/broker.js";
import type { Sections } from "../config/sections/index.js";
import type { FanoutHub } from "../fanout/hub.js";
import type { Resume } from "../fanout/resume.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import type { PublishService } from "../publish/service.js";
import type { ConnectionGuard } from "./guard.js";
import type { Subscriptions } from "./subscriptions.js";
import type { PresenceHub } from "../presence/hub.js";
import type { EventRecorder } from "../events/recorder.js";
import type { RpcHook } from "../rpc/hook.js";
import type { WarnEvery } from "../util/warn-every.js";

/** What the WebSocket frame handlers (handlers.ts, refresh.ts) work with. */
export type HandlerContext = {
  /** The sections the WebSocket side uses. */
  config: Pick<Sections, "server" | "fanout" | "backpressure" | "durable" | "hooks">;
  broker: Broker;
  hub: FanoutHub;
  /** The resume path every door shares (start positions, catch-up, join). */
  resume: Resume;
  subs: Subscriptions;
  metrics: Metrics;
  log: Logger;
  isDraining: () => boolean;
  publisher: PublishService;
  /** Authentication, permissions and limits of sockets (auth/). */
  guard: ConnectionGuard;
  /** Presence (JetStream only): member entries, join/leave fan-out, member lists. */
  presence?: PresenceHub;
  /** The RPC hook (RPC_HOOK_URL), when set: without it `rpc` is answered `rpc_unavailable`. */
  rpc?: RpcHook;
  /** Connection and subscription events (EVENTS), when any kind is recorded. */
  events?: EventRecorder;
  /**
   * Where a failure answered `internal` is logged: by op, the first at once, then at most once a minute with
   * how many were not logged (a client repeating the frame that fails cannot fill the log).
   */
  failures: WarnEvery;
};
