import client from "prom-client";

/** The names of each family: the workers' hooks, and the primary's webhook sender (both served on one /metrics). */
const NAMES = {
  backend: { calls: { name: "fanout_backend_calls_total" }, seconds: { name: "fanout_backend_call_seconds" } },
  webhook: { calls: { name: "fanout_webhook_calls_total" }, seconds: { name: "fanout_webhook_call_seconds" } },
} as const;

/**
 * Calls to the application backend, per hook (connect, subscribe, webhook…) and result: ok (2xx), status
 * (any other answer), timeout, unreachable, too_large (an answer longer than its cap). Made once per registry: every caller of a process shares them.
 */
export function backendMetrics(registry: client.Registry = client.register, family: keyof typeof NAMES = "backend") {
  const r = [registry];
  const names = NAMES[family];
  const calls =
    (registry.getSingleMetric(names.calls.name) as client.Counter<"hook" | "result"> | undefined) ??
    new client.Counter({
      name: names.calls.name,
      help: "Calls to the application backend by hook and result: ok (2xx), status (another answer), timeout, unreachable, too_large (an answer over its byte cap)",
      labelNames: ["hook", "result"] as const,
      registers: r,
    });
  const seconds =
    (registry.getSingleMetric(names.seconds.name) as client.Histogram<"hook"> | undefined) ??
    new client.Histogram({
      name: names.seconds.name,
      help: "Time from a call to the backend to its answer (or failure), by hook",
      labelNames: ["hook"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    });
  return { calls, seconds };
}

export type BackendMetrics = ReturnType<typeof backendMetrics>;
