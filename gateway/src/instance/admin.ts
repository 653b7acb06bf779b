import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Logger } from "../log.js";
import { STATS_PATH } from "../http/stats.js";
import { ErrorCode } from "../protocol/codes.js";
import { writeNodeError } from "../protocol/http-reply.js";
import type { InstanceMetrics } from "./instance-metrics.js";

/**
 * The admin listener, served by the primary on its own address (loopback by default): `/metrics`,
 * `/v1/stats`, `/healthz` and the control plane (`/v1/server/…`, with an API key). With it, those leave the public port, so that the public may not read them
 * and a flood of requests to them cannot reach the workers that deliver messages.
 */
export async function startAdmin(
  host: string,
  port: number,
  metrics: InstanceMetrics,
  log: Logger,
  /** The control plane's door (`/v1/server/…`, control/admin-door.ts): true when it took the request. */
  control?: (req: IncomingMessage, res: ServerResponse) => boolean,
): Promise<{ port: number; close(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    if (control?.(req, res)) return;
    const path = (req.url ?? "/").split("?")[0];
    const fail = (code: ErrorCode) => (e: unknown) => writeNodeError(res, { code, message: (e as Error).message });
    if (req.method !== "GET") {
      res.setHeader("allow", "GET");
      writeNodeError(res, { code: ErrorCode.MethodNotAllowed, message: `use GET for ${path}` });
    } else if (path === "/metrics") {
      metrics.text().then((m) => res.writeHead(200, { "content-type": m.contentType }).end(m.text), fail(ErrorCode.MetricsUnavailable));
    } else if (path === STATS_PATH) {
      metrics.stats().then((body) => res.writeHead(200, { "content-type": "application/json" }).end(body), fail(ErrorCode.StatsUnavailable));
    } else if (path === "/healthz") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
    } else {
      writeNodeError(res, { code: ErrorCode.NotFound, message: `no route for GET ${path}` });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as { port: number }).port;
  log.info({ host, port: bound }, "admin listener ready (/metrics, /v1/stats, /v1/server/…)");
  return {
    port: bound,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
