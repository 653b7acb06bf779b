import { readFileSync } from "node:fs";
import { hostname } from "node:os";
import { resolve } from "node:path";
import { PACKAGE_ROOT } from "../config/config.js";
import type { Sections } from "../config/sections/index.js";
import type { Metrics } from "../metrics/metrics.js";
import type { TemplatedApp } from "../uws.js";
import type { ServerApiDeps } from "./context.js";
import { registerServerApiRoutes } from "./http.js";
import { ServerApi } from "./server-api.js";

/**
 * Centrifugo's HTTP server API on the worker's apps (`/api`, docs/backends.md): a translation in front of the
 * publish service, history, presence and the control plane, with the gateway's API keys and their scopes.
 */
export function startCentrifugoApi(
  c: Pick<Sections, "server" | "reads">,
  apps: readonly TemplatedApp[],
  d: Omit<ServerApiDeps, "historyMaxBytes" | "maxItems" | "instance" | "version" | "calls"> & { metrics: Metrics },
): ServerApi {
  const { metrics, ...deps } = d;
  const api = new ServerApi({
    ...deps,
    calls: metrics.centrifugoApiCalls,
    historyMaxBytes: c.reads.historyMaxBytes,
    maxItems: c.server.publishBatchMaxItems,
    instance: `${hostname()}:${process.ppid}`,
    version: packageVersion(),
  });
  for (const a of apps) registerServerApiRoutes(a, { api, access: d.access, maxBodyBytes: c.server.publishBatchMaxBytes, log: d.log });
  return api;
}

function packageVersion(): string {
  try {
    return (JSON.parse(readFileSync(resolve(PACKAGE_ROOT, "package.json"), "utf8")) as { version?: string }).version ?? "";
  } catch {
    return "";
  }
}
