import client from "prom-client";

/** Metrics of authentication and abuse limits; made once per worker, aggregated by the primary. */
export function createGuardMetrics(registry: client.Registry = client.register) {
  const r = [registry];
  const rejected = new client.Counter({
    name: "fanout_upgrades_rejected_total",
    help: "WebSocket upgrades refused, by reason",
    labelNames: ["reason"] as const,
    registers: r,
  });
  const authFailures = new client.Counter({
    name: "fanout_auth_failures_total",
    help: "Tokens or API keys refused, by reason",
    labelNames: ["reason"] as const,
    registers: r,
  });
  const readsRefused = new client.Counter({
    name: "fanout_reads_refused_total",
    help: "HTTP history requests and SSE opens refused with 429, by reason (ip_rate, user_rate, ip_concurrent, table_full)",
    labelNames: ["reason"] as const,
    registers: r,
  });
  const publishesRefused = new client.Counter({
    name: "fanout_publishes_refused_total",
    help: "HTTP publish requests refused with 429 (PUBLISH_RATE), by reason (rate, table_full)",
    labelNames: ["reason"] as const,
    registers: r,
  });
  return {
    rejected: (reason: string) => rejected.labels(reason).inc(),
    publishRefused: (reason: string) => publishesRefused.labels(reason).inc(),
    readRefused: (reason: string) => readsRefused.labels(reason).inc(),
    authFailure: (reason: string) => authFailures.labels(reason).inc(),
    rateLimitCloses: new client.Counter({ name: "fanout_rate_limit_closes_total", help: "Connections closed with 4029 for their frame rate", registers: r }),
    tokenExpiryCloses: new client.Counter({ name: "fanout_token_expiry_closes_total", help: "Connections closed with 4001 at token expiry", registers: r }),
    ipEntries: new client.Gauge({ name: "fanout_ip_table_entries", help: "Client IPs tracked for per-IP limits", registers: r }),
    workersFull: new client.Gauge({
      name: "fanout_workers_full",
      help: "Workers whose listeners are closed at their connection cap (WORKER_MAX_CONNECTIONS), summed over workers",
      registers: r,
    }),
    capReached: new client.Counter({
      name: "fanout_worker_cap_reached_total",
      help: "Times a worker reached its connection cap and closed its listeners (WORKER_MAX_CONNECTIONS)",
      registers: r,
    }),
  };
}

export type GuardMetrics = ReturnType<typeof createGuardMetrics>;
