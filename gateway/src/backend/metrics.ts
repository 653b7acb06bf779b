import client from "prom-client";

/**
 * Calls to the application backend, per hook (connect, subscribe, webhook…) and result: ok (2xx), status
 * (any other answer), timeout, unreachable. Made once per registry: every caller of a process shares them.
 */
export function backendMetrics(registry: client.Registry = client.register) {
  const r = [registry];
  const calls =
    (registry.getSingleMetric("fanout_backend_calls_total") as client.Counter<"hook" | "result"> | undefined) ??
    new client.Counter({
      name: "fanout_backend_calls_total",
      help: "Calls to the application backend (hooks, webhooks) by hook and result: ok (2xx), status (another answer), timeout, unreachable",
      labelNames: ["hook", "result"] as const,
      registers: r,
    });
  const seconds =
    (registry.getSingleMetric("fanout_backend_call_seconds") as client.Histogram<"hook"> | undefined) ??
    new client.Histogram({
      name: "fanout_backend_call_seconds",
      help: "Time from a call to the backend to its answer (or failure), by hook",
      labelNames: ["hook"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    });
  return { calls, seconds };
}

export type BackendMetrics = ReturnType<typeof backendMetrics>;
