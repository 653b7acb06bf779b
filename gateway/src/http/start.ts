import type { Sections } from "../config/sections/index.js";
import type { ReadLimiter } from "../limits/read-limits.js";
import { publishLimiterFor, type PublishLimiter } from "../limits/publish-limits.js";
import type { GuardMetrics } from "../limits/metrics.js";
import type { WorkerState } from "../metrics/worker-state.js";
import type { TemplatedApp } from "../uws.js";
import { registerHttpRoutes, type HttpContext } from "./routes.js";

/**
 * A worker's HTTP door on each of its apps: health, readiness, metrics, stats, publish (with its allowances,
 * PUBLISH_RATE …), history (with the read allowances it shares with SSE), presence. Its tables join `state`.
 * Returns the publish allowances, which other doors publishing over HTTP share (centrifugo/start.ts).
 */
export function startHttp(
  c: Pick<Sections, "server" | "reads" | "limits">,
  apps: readonly TemplatedApp[],
  ctx: Omit<HttpContext, "config" | "history" | "publishLimits">,
  d: { reads?: ReadLimiter; guardMetrics: GuardMetrics; state: WorkerState },
): { publishLimits: PublishLimiter | undefined } {
  const publishLimits = publishLimiterFor(c.limits.publish, d.guardMetrics.publishRefused);
  const history = { broker: ctx.broker, maxBytes: c.reads.historyMaxBytes, reads: d.reads };
  for (const a of apps) registerHttpRoutes(a, { ...ctx, config: c.server, history, publishLimits });
  d.state.add({
    read_limit_ips: () => d.reads?.size.ips ?? 0,
    read_limit_users: () => d.reads?.size.users ?? 0,
    publish_limit_entries: () => publishLimits?.size ?? 0,
  });
  return { publishLimits };
}
