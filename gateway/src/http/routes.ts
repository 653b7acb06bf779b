import { hasHugeNumber, HUGE_NUMBER } from "../protocol/json-numbers.js";
import type { Broker } from "../broker/broker.js";
import type { ServerSection } from "../config/sections/index.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { checkChannel, checkPattern } from "../protocol/channel.js";
import { ErrorCode } from "../protocol/codes.js";
import type { HttpRequest, HttpResponse, TemplatedApp } from "../uws.js";
import { unsupportedMedia, type ErrorReply } from "../protocol/http-reply.js";
import type { PublishService } from "../publish/service.js";
import { GatewayError } from "../errors.js";
import { readBody, send, sendError, sendJson, sendRefusal, track, type ResState } from "./respond.js";
import { history, HISTORY_PREFIX, type HistoryContext } from "./history.js";
import { registerStaticRoutes } from "./static.js";
import { registerStatsRoute } from "./stats.js";
import { publishedBy, publisherOf, readerOf, type AccessControl, type Knock } from "../auth/access.js";
import { publishRefusal, type Publisher, type PublishLimiter } from "../limits/publish-limits.js";
import { authorizeRequest, identifyRequest, readKnock } from "../auth/http-auth.js";
import { parseBatch, parseTtl, TTL_FORMAT } from "../protocol/batch.js";
import { isOneLineJson } from "../protocol/json-check.js";
import { DATA_TOO_DEEP, jsonNestsDeeper, MAX_DATA_DEPTH } from "../protocol/depth.js";
import { OCTET_STREAM } from "../protocol/content-type.js";
import type { PresenceHub } from "../presence/hub.js";
import { registerPresenceRoute } from "./presence.js";

export type HttpContext = {
  /** Its section: body size limits, and whether an admin listener took /metrics and /v1/stats. */
  config: Pick<ServerSection, "maxPayloadBytes" | "adminPort" | "publishBatchMaxItems" | "publishBatchMaxBytes">;
  publisher: PublishService;
  broker: Broker;
  metrics: Metrics;
  log: Logger;
  isDraining: () => boolean;
  /** The authorization chain of every door (auth/access.ts). */
  access: AccessControl;
  /** What of the stream's setup has drifted, as the primary last said (broker/jetstream/stream-watch.ts); /readyz is 503 while any. */
  streamDrift: () => readonly string[];
  /** Whether every worker of the instance listens (the primary says so once they all do); /readyz is 503 until then. */
  allWorkersReady: () => boolean;
  /** Prometheus text aggregated over all workers (asked of the primary). */
  clusterMetrics: () => Promise<{ text: string; contentType: string }>;
  /** The `/v1/stats` body (asked of the primary, which sees every worker). */
  clusterStats: () => Promise<string>;
  /** Presence member lists (JetStream only). */
  presence?: PresenceHub;
  /** The history door's answer bound and read allowances. */
  history: HistoryContext;
  /** HTTP publish allowances in messages (PUBLISH_RATE …); undefined: unlimited. */
  publishLimits?: PublishLimiter | undefined;
  /** Whether a browser page of this origin may publish (ALLOWED_ORIGINS; "" is no browser: always); `host`: the request's Host. */
  allowsOrigin: (origin: string, host: string) => boolean;
};

const PUBLISH_PREFIX = "/v1/publish/";

export function registerHttpRoutes(app: TemplatedApp, ctx: HttpContext): void {
  app.get("/healthz", (res) => {
    sendJson(res, track(res), 200, { status: "ok" });
  });

  app.get("/readyz", (res) => {
    const connected = ctx.broker.isConnected();
    const draining = ctx.isDraining();
    const drift = ctx.streamDrift();
    const starting = !ctx.allWorkersReady();
    const ready = connected && !draining && drift.length === 0 && !starting;
    sendJson(res, track(res), ready ? 200 : 503, {
      ready,
      broker: { kind: ctx.broker.kind, connected },
      draining,
      ...(starting ? { starting } : {}),
      ...(drift.length ? { stream: { drift } } : {}),
    });
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
    // application/octet-stream: the body is bytes, stored as they are with that content type (a binary payload).
    const refused = writeRefusal(ctx, req, ["application/json", OCTET_STREAM]);
    if (refused) return sendError(res, st, refused);
    const rawChannel = req.getUrl().slice(PUBLISH_PREFIX.length);
    const msgId = req.getHeader("idempotency-key") || undefined;
    const ttl = new URLSearchParams(req.getQuery() ?? "").get("ttl") ?? undefined;
    const bytes = req.getHeader("content-type").toLowerCase().startsWith(OCTET_STREAM);
    void httpPublish(ctx, res, st, rawChannel, { msgId, ttl, bytes }, publishKnock(ctx, req, res));
  });

  app.post("/v1/publish", (res, req) => {
    const st = track(res);
    const refused = writeRefusal(ctx, req, ["application/json", "application/x-ndjson"]);
    if (refused) return sendError(res, st, refused);
    const ndjson = req.getHeader("content-type").toLowerCase().startsWith("application/x-ndjson");
    void batchPublish(ctx, res, st, ndjson, publishKnock(ctx, req, res));
  });

  if (publicMetrics) registerStatsRoute(app, ctx.clusterStats);
  registerStaticRoutes(app, ctx.log); // the live page at / and the client SDK at /client.js

  registerPresenceRoute(app, {
    presence: ctx.presence,
    access: ctx.access,
    log: ctx.log,
    brokerKind: ctx.broker.kind,
    isConnected: () => ctx.broker.isConnected(),
  });

  app.get(`${HISTORY_PREFIX}*`, (res, req) => {
    const st = track(res);
    // The address counts reads (READ_RATE_PER_IP) whether or not a hook is sent it.
    const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
    const [url, query, knock] = [req.getUrl(), req.getQuery() ?? "", readKnock(ctx.access, req, res, "http", ip)];
    const channel = historyChannel(url);
    // Nothing is read for a path that names no valid channel or pattern: there is nothing to authorize it against.
    if (channel === undefined)
      return sendError(res, st, { code: ErrorCode.BadChannel, message: "use /v1/channels/{channel}/messages with a valid channel or pattern" });
    const uses = new URLSearchParams(query).get("last_per_subject") === "1" ? (["lastValues"] as const) : (["history"] as const);
    void authorizeRequest(ctx.access, knock, { right: "sub", channel, uses }).then(
      (r) => ("refused" in r ? sendRefusal(res, st, r.refused) : history(ctx.history, res, st, url, query, { ip, user: readerOf(r.identity) })),
      (e) => sendError(res, st, { code: ErrorCode.Internal, message: (e as Error).message }),
    );
  });

  app.any("/*", (res, req) => {
    sendError(res, track(res), { code: ErrorCode.NotFound, message: `no route for ${req.getMethod().toUpperCase()} ${req.getUrl()}` });
  });
}

/**
 * What a publish is refused before anything else: a body not declared as one of `media` (a page may send a
 * form or text anywhere without asking, JSON only after a CORS preflight), and a browser page whose origin
 * ALLOWED_ORIGINS does not list.
 */
function writeRefusal(ctx: HttpContext, req: HttpRequest, media: readonly string[]): ErrorReply | undefined {
  const origin = req.getHeader("origin");
  if (!ctx.allowsOrigin(origin, req.getHeader("host")))
    return { code: ErrorCode.Forbidden, message: `origin ${origin.slice(0, 200)} is not allowed (ALLOWED_ORIGINS)` };
  return unsupportedMedia(req.getHeader("content-type"), media);
}

async function httpPublish(
  ctx: HttpContext,
  res: Parameters<Parameters<TemplatedApp["post"]>[1]>[0],
  st: ReturnType<typeof track>,
  rawChannel: string,
  { msgId, ttl: rawTtl, bytes }: { msgId: string | undefined; ttl: string | undefined; bytes: boolean },
  knock: Knock,
): Promise<void> {
  // As a batch's: the body is read once the request is known to be allowed (batchPublish).
  const reading = readBody(res, st, ctx.config.maxPayloadBytes);
  let channel: string;
  try {
    channel = decodeURIComponent(rawChannel);
  } catch {
    return sendError(res, st, { code: ErrorCode.BadChannel, message: "channel is not valid percent-encoding" });
  }
  const c = checkChannel(channel);
  if (!c.ok) return sendError(res, st, { code: ErrorCode.BadChannel, message: c.reason });
  const ttl = rawTtl === undefined ? undefined : parseTtl(rawTtl);
  if (rawTtl !== undefined && ttl === undefined) return sendError(res, st, { code: ErrorCode.BadRequest, message: TTL_FORMAT });
  const who = await authorizeRequest(ctx.access, knock, { right: "pub", channel, ttl });
  if ("refused" in who) return sendRefusal(res, st, who.refused);
  if (!withinPublishRate(ctx, res, st, publisherOf(who.identity, knock), 1)) return;
  const body = await reading;
  if (body === undefined) return;
  if (body === "too_large") return sendError(res, st, { code: ErrorCode.PayloadTooLarge, message: `body is larger than ${ctx.config.maxPayloadBytes} bytes` });
  if (msgId !== undefined && !/^[\x21-\x7e]{1,128}$/.test(msgId))
    return sendError(res, st, { code: ErrorCode.BadRequest, message: "Idempotency-Key must be 1-128 printable ASCII characters" });
  // A value nested deeper than a frame's data may be could not be sent again in every frame (readers' decoders,
  // the MessagePack encoder): refused as the WebSocket door refuses it.
  const text = bytes ? undefined : body.toString("utf8");
  if (text !== undefined && jsonNestsDeeper(text, MAX_DATA_DEPTH)) return sendError(res, st, { code: ErrorCode.BadRequest, message: DATA_TOO_DEEP });
  // Bytes are stored as they are; one line of JSON is stored as sent; anything else is parsed (or refused) and stored compact.
  const asSent = !bytes && isOneLineJson(body) ? body : undefined;
  let data: unknown = bytes ? body : undefined;
  if (!asSent && text !== undefined)
    try {
      data = JSON.parse(text);
      if (hasHugeNumber(text, data)) return sendError(res, st, { code: ErrorCode.BadRequest, message: HUGE_NUMBER });
    } catch {
      return sendError(res, st, { code: ErrorCode.BadJson, message: "body is not valid JSON" });
    }
  try {
    const r = await ctx.publisher.publish("http", publishedBy(who.identity), channel, data, msgId, asSent, ttl, bytes ? OCTET_STREAM : undefined);
    send(res, st, 201, `{"seq":${r.seq},"duplicate":${r.duplicate}}`);
  } catch (e) {
    if (e instanceof GatewayError) return sendError(res, st, e);
    ctx.log.error({ err: e }, "http publish failed");
    sendError(res, st, { code: ErrorCode.Internal, message: "internal error" });
  }
}

/**
 * `POST /v1/publish`: a batch, as a JSON array or NDJSON (`Content-Type: application/x-ndjson`, one item per
 * line) of `{channel, data, msgId?, ttl?, tags?}`. The request is identified once; each item passes the rest of the
 * chain (the publish permission) on its own; all are published pipelined. 200 with one result per item.
 */
async function batchPublish(ctx: HttpContext, res: HttpResponse, st: ResState, ndjson: boolean, knock: Knock): Promise<void> {
  const { publishBatchMaxBytes: maxBytes, publishBatchMaxItems: maxItems } = ctx.config;
  // The body is taken as it comes (uWS drops what no handler takes), but read and parsed only for a caller
  // the chain knows: a refused one is answered at once, its body's bytes dropped as they arrive.
  const reading = readBody(res, st, maxBytes);
  const who = await identifyRequest(ctx.access, knock);
  if ("refused" in who) return sendRefusal(res, st, who.refused);
  const body = await reading;
  if (body === undefined) return;
  if (body === "too_large") return sendError(res, st, { code: ErrorCode.PayloadTooLarge, message: `body is larger than ${maxBytes} bytes` });
  let raw: unknown;
  let text: string;
  try {
    text = body.toString("utf8");
    raw = ndjson
      ? text
          .split("\n")
          .filter((l) => l.trim() !== "")
          .map((l) => JSON.parse(l) as unknown)
      : JSON.parse(text);
  } catch {
    return sendError(res, st, { code: ErrorCode.BadJson, message: ndjson ? "a line is not valid JSON" : "body is not valid JSON" });
  }
  if (hasHugeNumber(text, raw)) return sendError(res, st, { code: ErrorCode.BadRequest, message: HUGE_NUMBER });
  // An item's data sits one level down in an NDJSON line, two in an array.
  if (jsonNestsDeeper(text, MAX_DATA_DEPTH + (ndjson ? 1 : 2))) return sendError(res, st, { code: ErrorCode.BadRequest, message: DATA_TOO_DEEP });
  const items = parseBatch(raw, maxItems, true);
  if (typeof items === "string") return sendError(res, st, { code: ErrorCode.BadRequest, message: items });
  if (!withinPublishRate(ctx, res, st, publisherOf(who.identity, knock), items.length)) return;
  try {
    const results = await ctx.publisher.publishBatch("http", publishedBy(who.identity), items, (it) =>
      ctx.access.authorize(who.identity, { right: "pub", channel: it.channel, ttl: it.ttl }),
    );
    send(res, st, 200, `{"results":${JSON.stringify(results)}}`);
  } catch (e) {
    ctx.log.error({ err: e }, "http batch publish failed");
    sendError(res, st, { code: ErrorCode.Internal, message: "internal error" });
  }
}

/** A publish request's credentials, with the client's address when PUBLISH_RATE counts by it. */
function publishKnock(ctx: HttpContext, req: HttpRequest, res: HttpResponse): Knock {
  return readKnock(ctx.access, req, res, "http", ctx.publishLimits ? Buffer.from(res.getRemoteAddressAsText()).toString() : undefined);
}

/** Takes `items` messages of the publisher's allowance; false when it answered 429 (Retry-After) instead. */
function withinPublishRate(ctx: HttpContext, res: HttpResponse, st: ResState, who: Publisher, items: number): boolean {
  const v = ctx.publishLimits?.take(who, items, Date.now());
  if (!v || v.ok) return true;
  const r = publishRefusal(who, v);
  sendError(res, st, { code: ErrorCode.RateLimited, message: r.message, retryAfterSec: r.retryAfterSec });
  return false;
}

/** The channel (or pattern) of a history path, when it is a valid one (history() answers the malformed ones). */
function historyChannel(path: string): string | undefined {
  const encoded = /^\/v1\/channels\/([^/]+)\/messages$/.exec(path)?.[1];
  try {
    const channel = encoded !== undefined ? decodeURIComponent(encoded) : undefined;
    // A pattern is checked too (last-value reads take one): the sub right must cover all of it.
    return channel !== undefined && checkPattern(channel).ok ? channel : undefined;
  } catch {
    return undefined;
  }
}
