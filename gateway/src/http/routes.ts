import type { Broker } from "../broker/broker.js";
import type { ServerSection } from "../config/sections.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { checkChannel, checkPattern } from "../protocol/channel.js";
import { ErrorCode } from "../protocol/codes.js";
import type { TemplatedApp } from "../uws.js";
import type { PublishService } from "../publish/service.js";
import { GatewayError } from "../errors.js";
import { readBody, send, sendJson, track } from "./respond.js";
import { history, HISTORY_PREFIX, type HistoryContext } from "./history.js";
import { registerStaticRoutes } from "./static.js";
import { registerStatsRoute } from "./stats.js";
import type { Authenticator } from "../auth/authenticator.js";
import { authorizeHttp, readCredentials } from "../auth/http-auth.js";
import type { PresenceHub } from "../presence/hub.js";
import { registerPresenceRoute } from "./presence.js";

export type HttpContext = {
  /** Its section: body size limit, and whether an admin listener took /metrics and /v1/stats. */
  config: Pick<ServerSection, "maxPayloadBytes" | "adminPort">;
  publisher: PublishService;
  broker: Broker;
  metrics: Metrics;
  log: Logger;
  isDraining: () => boolean;
  /** Credentials of HTTP publish and history (allow-all when authentication is off). */
  auth: Authenticator;
  /** Prometheus text aggregated over all workers (asked of the primary). */
  clusterMetrics: () => Promise<{ text: string; contentType: string }>;
  /** Presence member lists (JetStream only). */
  presence?: PresenceHub;
  /** The history door's answer bound and read allowances. */
  history: HistoryContext;
};

const PUBLISH_PREFIX = "/v1/publish/";

export function registerHttpRoutes(app: TemplatedApp, ctx: HttpContext): void {
  app.get("/healthz", (res) => {
    sendJson(res, track(res), 200, { status: "ok" });
  });

  app.get("/readyz", (res) => {
    const connected = ctx.broker.isConnected();
    const draining = ctx.isDraining();
    const ready = connected && !draining;
    sendJson(res, track(res), ready ? 200 : 503, { ready, broker: { kind: ctx.broker.kind, connected }, draining });
  });

  // With an admin listener (the primary's), metrics and stats are not on the public port at all.
  const publicMetrics = ctx.config.adminPort < 0;
  if (publicMetrics)
    app.get("/metrics", (res) => {
      const st = track(res);
      ctx.clusterMetrics().then(
        (m) => send(res, st, 200, m.text, m.contentType),
        (e) => send(res, st, 500, `# metrics unavailable: ${(e as Error).message}\n`, "text/plain"),
      );
    });

  app.post(`${PUBLISH_PREFIX}*`, (res, req) => {
    const st = track(res);
    const rawChannel = req.getUrl().slice(PUBLISH_PREFIX.length);
    const msgId = req.getHeader("idempotency-key") || undefined;
    void httpPublish(ctx, res, st, rawChannel, msgId, readCredentials(req));
  });

  if (publicMetrics) registerStatsRoute(app, ctx.clusterMetrics);
  registerStaticRoutes(app, ctx.log); // the live page at / and the client SDK at /client.js

  registerPresenceRoute(app, {
    presence: ctx.presence,
    auth: ctx.auth,
    log: ctx.log,
    brokerKind: ctx.broker.kind,
    isConnected: () => ctx.broker.isConnected(),
  });

  app.get(`${HISTORY_PREFIX}*`, (res, req) => {
    const st = track(res);
    const [url, query, creds] = [req.getUrl(), req.getQuery() ?? "", readCredentials(req)];
    const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
    void authorizeHttp(ctx.auth, creds, "sub", historyChannel(url)).then(
      (denied) => (denied ? sendJson(res, st, denied.status, denied.body) : history(ctx.history, res, st, url, query, { ip, creds })),
      (e) => sendJson(res, st, 500, { error: ErrorCode.Internal, message: (e as Error).message }),
    );
  });

  app.any("/*", (res, req) => {
    sendJson(res, track(res), 404, { error: "not_found", message: `no route for ${req.getMethod().toUpperCase()} ${req.getUrl()}` });
  });
}

async function httpPublish(
  ctx: HttpContext,
  res: Parameters<Parameters<TemplatedApp["post"]>[1]>[0],
  st: ReturnType<typeof track>,
  rawChannel: string,
  msgId: string | undefined,
  creds: ReturnType<typeof readCredentials>,
): Promise<void> {
  const body = await readBody(res, st, ctx.config.maxPayloadBytes);
  if (body === undefined) return;
  if (body === "too_large")
    return sendJson(res, st, 413, { error: ErrorCode.PayloadTooLarge, message: `body is larger than ${ctx.config.maxPayloadBytes} bytes` });
  let channel: string;
  try {
    channel = decodeURIComponent(rawChannel);
  } catch {
    return sendJson(res, st, 400, { error: ErrorCode.BadChannel, message: "channel is not valid percent-encoding" });
  }
  const c = checkChannel(channel);
  if (!c.ok) return sendJson(res, st, 400, { error: ErrorCode.BadChannel, message: c.reason });
  const denied = await authorizeHttp(ctx.auth, creds, "pub", channel);
  if (denied) return sendJson(res, st, denied.status, denied.body);
  if (msgId !== undefined && !/^[\x21-\x7e]{1,128}$/.test(msgId))
    return sendJson(res, st, 400, { error: ErrorCode.BadRequest, message: "Idempotency-Key must be 1-128 printable ASCII characters" });
  let data: unknown;
  try {
    data = JSON.parse(body.toString("utf8"));
  } catch {
    return sendJson(res, st, 400, { error: ErrorCode.BadJson, message: "body is not valid JSON" });
  }
  try {
    const r = await ctx.publisher.publish("http", channel, data, msgId);
    sendJson(res, st, 201, { seq: r.seq, duplicate: r.duplicate });
  } catch (e) {
    if (e instanceof GatewayError) return sendJson(res, st, e.status, { error: e.code, message: e.message, temporary: e.temporary });
    ctx.log.error({ err: e }, "http publish failed");
    sendJson(res, st, 500, { error: ErrorCode.Internal, message: "internal error" });
  }
}

/** The channel (or pattern) of a history path, when it is a valid one (history() answers the malformed ones). */
function historyChannel(path: string): string | undefined {
  const m = /^\/v1\/channels\/([^/]+)\/messages$/.exec(path);
  try {
    const channel = m ? decodeURIComponent(m[1]!) : undefined;
    // A pattern is checked too (last-value reads take one): the sub right must cover all of it.
    return channel !== undefined && checkPattern(channel).ok ? channel : undefined;
  } catch {
    return undefined;
  }
}
