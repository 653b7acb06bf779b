import type { Secrets } from "../config/secrets.js";

/** Messages between the primary and its workers (besides prom-client's own). */
export type ToPrimary = { type: "fgw:listening"; port: number } | { type: "fgw:metrics-req"; id: number } | { type: "fgw:secrets-req" };

export type ToWorker =
  | { type: "fgw:shutdown" }
  /** What of the stream's setup has drifted (empty: nothing); the primary's StreamWatch tells every worker. */
  | { type: "fgw:drift"; drift: string[] }
  /** The secret settings, asked for by a worker at start: they are not in its environment. */
  | { type: "fgw:secrets"; secrets: Secrets }
  | { type: "fgw:metrics-res"; id: number; text?: string; contentType?: string; error?: string };

export const isFgwMessage = (m: unknown): m is { type: string } =>
  typeof m === "object" && m !== null && typeof (m as { type?: unknown }).type === "string" && (m as { type: string }).type.startsWith("fgw:");
