import type { TemplatedApp } from "../uws.js";
import type { WorkerState } from "../metrics/worker-state.js";
import { SseEndpoint, type SseContext } from "./endpoint.js";

/** A worker's Server-Sent Events door on each of its apps (before the HTTP routes' catch-alls), its streams in `state`. */
export function startSse(ctx: SseContext, apps: readonly TemplatedApp[], state: WorkerState): SseEndpoint {
  const sse = new SseEndpoint(ctx);
  for (const a of apps) sse.register(a);
  sse.start();
  state.add({ sse_streams: () => sse.streams.size });
  return sse;
}
