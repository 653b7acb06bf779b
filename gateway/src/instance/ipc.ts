import type { Registry } from "prom-client";
import type { Secrets } from "../config/secrets.js";

/** One worker's metrics as prom-client's `getMetricsAsJSON()` gives them. */
export type MetricsJson = Awaited<ReturnType<Registry["getMetricsAsJSON"]>>;

/** Messages between the primary and its workers (besides prom-client's own). */
export type ToPrimary =
  | { type: "fgw:listening"; port: number }
  /** A worker asks for the cluster's metrics: Prometheus text, or the `/v1/stats` body. */
  | { type: "fgw:metrics-req"; id: number; what?: "prometheus" | "stats" }
  | { type: "fgw:secrets-req" }
  /** The worker's first subscriber of a channel, or identified presence member of a user, came (held) or its last went (events/tally.ts). */
  | { type: "fgw:share"; key: string; held: boolean }
  /** A worker's own metrics, answering the primary's scrape. */
  | { type: "fgw:scrape-res"; id: number; metrics: MetricsJson; error?: string };

export type ToWorker =
  | { type: "fgw:shutdown" }
  /** Every worker of the instance is listening (sent once they all are, and to a restarted worker at once): /readyz may answer 200. */
  | { type: "fgw:all-ready" }
  /** The primary scrapes each worker's own metrics (it aggregates them for /metrics, and keeps them per worker for /v1/stats). */
  | { type: "fgw:scrape-req"; id: number }
  /** What of the stream's setup has drifted (empty: nothing); the primary's StreamWatch tells every worker. */
  | { type: "fgw:drift"; drift: string[] }
  /** The secret settings, asked for by a worker at start: they are not in its environment. */
  | { type: "fgw:secrets"; secrets: Secrets }
  | { type: "fgw:metrics-res"; id: number; text?: string; contentType?: string; error?: string };

export const isFgwMessage = (m: unknown): m is { type: string } =>
  typeof m === "object" && m !== null && typeof (m as { type?: unknown }).type === "string" && (m as { type: string }).type.startsWith("fgw:");
