import client from "prom-client";

/** Metrics of presence; made once per worker, aggregated by the primary. */
export function createPresenceMetrics(registry: client.Registry = client.register) {
  const r = [registry];
  return {
    ownMembers: new client.Gauge({ name: "fanout_presence_members_own", help: "Presence entries this worker holds and refreshes", registers: r }),
    watches: new client.Gauge({ name: "fanout_presence_watches", help: "Channels whose presence this worker watches (one subscription each)", registers: r }),
    changes: new client.Counter({
      name: "fanout_presence_changes_total",
      help: "Presence joins and leaves seen by the worker's watches (each published once to its local subscribers)",
      labelNames: ["type"] as const,
      registers: r,
    }),
    encodeFailures: new client.Counter({
      name: "fanout_presence_encode_failures_total",
      help: "Join or leave frames one codec could not encode (its watchers missed them; the other codecs' got theirs), by codec",
      labelNames: ["codec"] as const,
      registers: r,
    }),
    refreshSeconds: new client.Histogram({
      name: "fanout_presence_refresh_seconds",
      help: "Duration of one refresh of all of a worker's presence entries",
      buckets: [0.005, 0.02, 0.1, 0.5, 2, 10],
      registers: r,
    }),
  };
}

export type PresenceMetrics = ReturnType<typeof createPresenceMetrics>;
