import type { EventRecorder } from "../events/recorder.js";
import { readerOf, type AccessControl, type Knock } from "../auth/access.js";
import { authorizeRequest, readKnock } from "../auth/http-auth.js";
import type { Broker } from "../broker/broker.js";
import type { AuthSection, BackpressureSection, SseSection } from "../config/sections/index.js";
import { brokerFailure } from "../errors.js";
import type { FanoutHub } from "../fanout/hub.js";
import type { Feed } from "../fanout/feed.js";
import { resolveStart, startFeatures, type Resume, type StartReport } from "../fanout/resume.js";
import type { Admission } from "../limits/admission.js";
import { checkRead, type ReadLimiter } from "../limits/read-limits.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { checkPattern } from "../protocol/channel.js";
import { ErrorCode } from "../protocol/codes.js";
import { statusLine, writeUwsError } from "../protocol/http-reply.js";
import type { HttpRequest, HttpResponse, TemplatedApp } from "../uws.js";
import { eventId, parseStart, streamPreamble, type SseStart } from "./event.js";
import { sseLive, type SseLive } from "./live.js";
import { SseStream, type SseEndReason } from "./stream.js";

export const SSE_ROUTE = "/v1/channels/:channel/events";
const PATH = /^\/v1\/channels\/([^/]+)\/events$/;

export type SseContext = {
  config: Readonly<{ sse: SseSection; backpressure: BackpressureSection; auth: AuthSection }>;
  broker: Broker;
  hub: FanoutHub;
  /** The resume path every door shares (fanout/resume.ts). */
  resume: Resume;
  /** The authorization chain of every door (auth/access.ts). */
  access: AccessControl;
  /** The worker's connection admission (MAX_CONNECTIONS, per-IP limits, origins), shared with WebSockets. */
  admission: Admission;
  metrics: Metrics;
  log: Logger;
  isDraining: () => boolean;
  /** Read allowances per IP and user (READ_RATE_PER_IP …), shared with the history door; undefined: unlimited. */
  reads?: ReadLimiter;
  /** Connection and subscription events (EVENTS), when any kind is recorded: a stream is both at once. */
  events?: EventRecorder;
};

/** What a request asked for, read synchronously (uWS requests die when the handler returns). */
type SseRequest = {
  url: string;
  query: string;
  lastEventId: string;
  origin: string;
  /** The Host header: a page of the gateway's own origin is this host's. */
  host: string;
  ip: string;
  /** What the authorization chain needs: credentials (also `?token=`, which EventSource must use), hook headers. */
  knock: Knock;
  /** `?sub_token=`: a subscription token for the pattern (AUTH.md "Subscription tokens"). */
  subToken?: string;
};

/**
 * A stream ready to start: its feed, the last seq the client has (undefined: live from the feed's position),
 * the epoch its ids carry, the `gap` to tell, the token's expiry.
 */
type Ready = { feed: Feed; lastSent?: number; epoch?: string; gap?: Gap; exp?: number; subExp?: number; user: string };
type Gap = Record<string, unknown> & { epoch: string };

type HttpError = { status: number; code: ErrorCode; message: string; temporary?: boolean; retryAfterSec?: number };

/** The `err` event of a stream whose subscription token expired: reopen it with a new `sub_token` (Last-Event-ID resumes). */
const SUB_EXPIRED = {
  code: ErrorCode.SubscriptionExpired,
  message: "the subscription token expired; reopen the stream with a new sub_token",
  temporary: true,
};

/** What a stream asked for while its worker drains gets. */
const DRAINING: HttpError = { status: 503, code: ErrorCode.ShuttingDown, message: "server is shutting down; reconnect" };

/**
 * `GET /v1/channels/{pattern}/events`: a Server-Sent Events stream of one channel pattern. Each message is
 * an event with `id: <epoch>:<seq>`; a reconnecting EventSource sends the last one as `Last-Event-ID` and
 * gets everything after it, then live, from any worker, through the same catch-up hand-off as a WebSocket
 * subscription. Streams count as connections (MAX_CONNECTIONS, per-IP limits) and get heartbeat comments.
 */
export class SseEndpoint {
  readonly streams = new Set<SseStream>();
  private heartbeat?: NodeJS.Timeout;
  private readonly live: SseLive;

  constructor(private readonly ctx: SseContext) {
    this.live = sseLive(ctx.metrics, (pattern) => ctx.broker.epochReader(pattern));
  }

  register(app: TemplatedApp): void {
    app.get(SSE_ROUTE, (res, req) => this.open(res, req));
  }

  start(): void {
    this.heartbeat ??= setInterval(() => {
      for (const s of this.streams) s.heartbeat();
    }, this.ctx.config.sse.heartbeatMs);
    this.heartbeat.unref();
  }

  /**
   * Ends every stream, or with `holds` those whose pattern it accepts (drain, recreated stream): clients
   * reconnect and resume with Last-Event-ID.
   */
  endAll(holds?: (pattern: string) => boolean, why: "ended" | "shutdown" = "ended"): void {
    for (const s of [...this.streams]) if (!holds || holds(s.pattern)) s.end(why);
  }

  /**
   * Ends the streams of `user` whose pattern lies within `within` (all of them when undefined) with an `err`
   * event saying why (`disconnected`, `unsubscribed`); how many. `covers` is the permission matcher.
   */
  endUser(
    user: string,
    err: { code: ErrorCode; message: string; temporary: boolean },
    within?: string,
    covers?: (outer: string, inner: string) => boolean,
  ): number {
    let n = 0;
    for (const s of [...this.streams]) {
      if (s.user !== user || s.closed) continue;
      if (within !== undefined && covers && !covers(within, s.pattern)) continue;
      s.writeEvent("err", err);
      s.end("ended");
      n++;
    }
    return n;
  }

  /** The streams of `user`: one subscription each. */
  streamsOf(user: string): { id: number; ip: string; channel: string; state: string }[] {
    const out: { id: number; ip: string; channel: string; state: string }[] = [];
    for (const s of this.streams) if (s.user === user && !s.closed) out.push({ id: s.id, ip: s.ip, channel: s.pattern, state: s.phase });
    return out;
  }

  stop(): void {
    clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    this.endAll(undefined, "shutdown");
  }

  private open(res: HttpResponse, req: HttpRequest): void {
    const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
    const knock = readKnock(this.ctx.access, req, res, "sse", ip);
    const queryToken = req.getQuery("token");
    const r: SseRequest = {
      url: req.getUrl(),
      query: req.getQuery() ?? "",
      lastEventId: req.getHeader("last-event-id"),
      origin: req.getHeader("origin"),
      host: req.getHeader("host"),
      ip,
      knock: !knock.token && queryToken ? { ...knock, token: queryToken, tokenInUrl: true } : knock,
      subToken: req.getQuery("sub_token") || undefined,
    };
    const state = { aborted: false, stream: undefined as SseStream | undefined };
    res.onAborted(() => {
      state.aborted = true;
      state.stream?.aborted();
    });
    const early = this.check(r);
    if ("error" in early) return reply(res, r.origin, early.error);
    const refusal = this.ctx.admission.reserve(r.ip, r);
    if (refusal) {
      const code = refusal.status === 403 ? ErrorCode.Forbidden : refusal.status === 429 ? ErrorCode.RateLimited : ErrorCode.ShuttingDown;
      return reply(res, r.origin, { status: refusal.status, code, message: refusal.message, retryAfterSec: refusal.retryAfterSec });
    }
    this.prepare(r, early.pattern, early.start).then(
      (ready) => {
        // The worker began to drain while this stream was being prepared: its streams were ended and the
        // heartbeats stopped, so a stream begun now would stay open and silent until the process exits.
        if (!state.aborted && !("error" in ready) && this.ctx.isDraining()) ready = { error: DRAINING, feed: ready.feed };
        if (state.aborted || "error" in ready) {
          this.ctx.admission.cancel(r.ip);
          if ("feed" in ready && ready.feed) this.ctx.hub.release(early.pattern);
          if (!state.aborted && "error" in ready) res.cork(() => reply(res, r.origin, ready.error));
          return;
        }
        state.stream = this.begin(res, r, early.pattern, ready);
      },
      (e: unknown) => {
        this.ctx.admission.cancel(r.ip);
        this.ctx.log.error({ err: e }, "sse request failed");
        if (!state.aborted) res.cork(() => reply(res, r.origin, { status: 500, code: ErrorCode.Internal, message: "internal error" }));
      },
    );
  }

  /** The checks that need no broker: draining, path, pattern, start parameters. */
  private check(r: SseRequest): { pattern: string; start: SseStart } | { error: HttpError } {
    if (this.ctx.isDraining()) return { error: DRAINING };
    const m = PATH.exec(r.url);
    let pattern: string;
    try {
      pattern = decodeURIComponent(m?.[1] ?? "");
    } catch {
      return { error: { status: 400, code: ErrorCode.BadChannel, message: "channel is not valid percent-encoding" } };
    }
    const c = checkPattern(pattern);
    if (!c.ok) return { error: { status: 400, code: ErrorCode.BadChannel, message: c.reason } };
    const query = new URLSearchParams(r.query);
    // Deltas need a client that applies them: an EventSource shows each event's data as it is.
    if (query.has("delta"))
      return {
        error: { status: 400, code: ErrorCode.BadRequest, message: "Server-Sent Events send every message full: delta is for WebSocket subscriptions" },
      };
    const s = parseStart(query, r.lastEventId);
    if (!s.ok) return { error: { status: 400, code: ErrorCode.BadRequest, message: s.message } };
    if (s.start.kind !== "live" && !this.ctx.broker.replay && r.lastEventId === "")
      return {
        error: {
          status: 501,
          code: ErrorCode.UnsupportedByBroker,
          message: `the ${this.ctx.broker.kind} broker keeps no history: start positions need JetStream`,
        },
      };
    return { pattern, start: s.start };
  }

  /** Authorizes, takes the feed, and turns the start into the last seq the client has. */
  private async prepare(r: SseRequest, pattern: string, start: SseStart): Promise<Ready | { error: HttpError; feed?: Feed }> {
    const uses = ["sse", ...startFeatures(start)] as const;
    const a = await authorizeRequest(this.ctx.access, r.knock, { right: "sub", channel: pattern, uses, ...(r.subToken ? { token: r.subToken } : {}) });
    if ("refused" in a) return { error: a.refused };
    const limited = checkRead(this.ctx.reads, r.ip, readerOf(a.identity));
    if (limited) return { error: limited };
    // The stream ends at the token's expiry, as a WebSocket closes with 4001.
    const exp = a.identity.principal.exp;
    let feed: Feed;
    try {
      feed = await this.ctx.hub.acquire(pattern);
    } catch (e) {
      return { error: failure(e, this.ctx.broker, "subscribe") };
    }
    try {
      return { feed, exp, subExp: a.grant?.exp, user: a.identity.principal.user, ...(await this.resolve(pattern, feed, start)) };
    } catch (e) {
      return { error: failure(e, this.ctx.broker, "replay"), feed };
    }
  }

  /**
   * Where the stream starts, by the resume path every door shares (fanout/resume.ts), and the `gap` event
   * that tells the client when retention removed messages it asked for (`truncated`) or its id belongs to a
   * stream that was deleted and created again (`epochChanged`).
   */
  private async resolve(pattern: string, feed: Feed, start: SseStart): Promise<{ lastSent?: number; epoch?: string; gap?: Gap }> {
    const s = await resolveStart(this.ctx.broker.replay, pattern, start);
    const epoch = s.report?.epoch ?? this.ctx.broker.epochOf(pattern);
    const r = s.report;
    if (!r?.truncated || start.kind !== "after") return { lastSent: s.lastSent, epoch };
    return { lastSent: s.lastSent, epoch, gap: gapOf(r, start.after, start.epoch) };
  }

  private begin(res: HttpResponse, r: SseRequest, pattern: string, ready: Ready): SseStream {
    const { config, metrics, log, resume, broker, admission } = this.ctx;
    const { feed, lastSent, gap, exp, subExp, epoch, user } = ready;
    const stream = new SseStream(
      res,
      pattern,
      r.ip,
      feed,
      {
        resume,
        connected: () => broker.isConnected(),
        live: this.live,
        config,
        metrics,
        log,
        epoch: broker.epochReader(pattern),
        onEnd: (s, why) => this.ended(s, why),
      },
      epoch,
      user,
    );
    admission.opened(r.ip);
    this.streams.add(stream);
    metrics.sseConnections.inc();
    metrics.subscriptions.inc();
    res.cork(() => {
      res
        .writeStatus(statusLine(200))
        .writeHeader("content-type", "text/event-stream")
        .writeHeader("cache-control", "no-cache")
        .writeHeader("x-accel-buffering", "no");
      if (r.origin) res.writeHeader("access-control-allow-origin", r.origin).writeHeader("vary", "origin");
      res.write(streamPreamble(config.sse.retryMs));
      if (gap && lastSent !== undefined) stream.writeEvent("gap", gap, eventId(gap.epoch, lastSent));
      stream.start(lastSent);
    });
    const who = { user, client: stream.clientId, transport: "sse" } as const;
    this.ctx.events?.record("connect", who);
    this.ctx.events?.record("subscribe", { ...who, channel: pattern });
    // Whichever token expires first ends it: the connection's (`unauthorized`) or the subscription token's.
    const tolerance = config.auth.jwtClockToleranceSec;
    if (subExp !== undefined && (exp === undefined || subExp < exp)) stream.endAt((subExp + tolerance) * 1000, SUB_EXPIRED);
    else if (exp !== undefined) stream.endAt((exp + tolerance) * 1000);
    if (log.isLevelEnabled("debug")) log.debug({ pattern, lastSent, gap: gap !== undefined }, "sse stream opened");
    return stream;
  }

  private ended(s: SseStream, why: SseEndReason): void {
    if (!this.streams.delete(s)) return;
    this.ctx.admission.closed(s.ip);
    this.ctx.metrics.sseConnections.dec();
    this.ctx.metrics.subscriptions.dec();
    this.ctx.hub.release(s.pattern);
    const who = { user: s.user, client: s.clientId, transport: "sse" } as const;
    this.ctx.events?.record("unsubscribe", { ...who, channel: s.pattern });
    this.ctx.events?.record("disconnect", { ...who, by: why === "aborted" ? "client" : "server", reason: why });
    if (this.ctx.log.isLevelEnabled("debug")) this.ctx.log.debug({ pattern: s.pattern, why, lastSent: s.lastSent }, "sse stream ended");
  }
}

/** The `gap` event: the stream's bounds, where the client was (`after`, and `was`, its epoch, when that changed). */
function gapOf(r: StartReport, after: number, was: string | undefined): Gap {
  const bounds = { firstSeq: r.firstSeq, lastSeq: r.lastSeq, epoch: r.epoch };
  if (r.epochChanged) return { truncated: true, epochChanged: true, after, was, ...bounds };
  return { truncated: true, after, ...bounds };
}

function failure(e: unknown, broker: Broker, what: string): HttpError {
  const f = brokerFailure(e, broker.isConnected(), what);
  return { status: f.status, code: f.code, message: f.message, temporary: f.temporary };
}

/** A JSON error answer (protocol/http-reply.ts), with CORS so that a page can read it. */
function reply(res: HttpResponse, origin: string, e: HttpError): void {
  writeUwsError(res, e, origin ? { "access-control-allow-origin": origin, vary: "origin" } : undefined);
}
