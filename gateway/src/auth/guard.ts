import type { AuthSection, LimitsSection } from "../config/sections.js";
import { Admission } from "../limits/admission.js";
import { frameLimiterFor } from "../limits/frame-rate.js";
import type { GuardMetrics } from "../limits/metrics.js";
import type { Logger } from "../log.js";
import { CloseCode, ErrorCode } from "../protocol/codes.js";
import type { RefreshFrame } from "../protocol/frames.js";
import type { HttpRequest, HttpResponse, us_socket_context_t } from "../uws.js";
import { newSession, type Socket } from "../ws/session.js";
import type { Authenticator } from "./authenticator.js";
import { AuthError } from "./errors.js";
import { canSubscribe } from "./permissions.js";
import { ANONYMOUS, type Principal } from "./principal.js";
import { readUpgradeOffer } from "./upgrade-token.js";
import { applyGrant, type ConnectDecision, type Hooks } from "./hooks.js";
import { GatewayError } from "../errors.js";

/** setTimeout's longest delay; later expiries re-arm. */
const MAX_TIMER_MS = 2_147_483_647;

/** What a refresh did: the reply, and the subscriptions the new claims no longer allow. */
export type RefreshResult = { ok: true; exp: number | undefined; revoked: string[] } | { ok: false; code: ErrorCode; message: string };

/**
 * The gate of the WebSocket endpoint: admits upgrades (origin, connection limits, token), keeps each
 * socket's token expiry and frame-rate allowance, and swaps claims on refresh.
 */
export class ConnectionGuard {
  readonly admission: Admission;

  constructor(
    private readonly limits: LimitsSection,
    private readonly authConfig: AuthSection,
    readonly auth: Authenticator,
    private readonly metrics: GuardMetrics,
    private readonly log: Logger,
    /** Connect and subscribe hooks to the application backend, when configured. */
    readonly hooks?: Hooks,
  ) {
    this.admission = new Admission(limits, metrics);
    this.admission.start();
  }

  /** The uWS upgrade handler: synchronous when auth is off, otherwise verifies the token first. */
  upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t, isDraining: () => boolean): void {
    // The uWS request is only valid until this function returns: read all of it first.
    const key = req.getHeader("sec-websocket-key");
    const extensions = req.getHeader("sec-websocket-extensions");
    const origin = req.getHeader("origin");
    const offer = readUpgradeOffer({
      authorization: req.getHeader("authorization"),
      protocols: req.getHeader("sec-websocket-protocol"),
      queryToken: req.getQuery("token"),
    });
    const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
    const hooks = this.hooks?.connectEnabled ? this.hooks : undefined;
    const hookHeaders: Record<string, string> = {};
    if (hooks)
      for (const h of hooks.headerNames) {
        const v = req.getHeader(h);
        if (v) hookHeaders[h] = v;
      }
    if (isDraining()) return reject(res, 503, ErrorCode.ShuttingDown, "server is shutting down");
    if ("error" in offer) return reject(res, 400, ErrorCode.BadRequest, offer.error);
    const refusal = this.admission.reserve(ip, origin);
    if (refusal)
      return reject(
        res,
        refusal.status,
        refusal.status === 403 ? ErrorCode.Forbidden : refusal.status === 429 ? ErrorCode.RateLimited : ErrorCode.ShuttingDown,
        refusal.message,
        refusal.retryAfterSec,
      );
    const accept = (p: Principal, hook?: Omit<ConnectDecision, "principal">): void => {
      const s = newSession(ip, p.user);
      s.principal = p;
      if (hook) {
        s.hookGrant = hook.grant;
        if (hook.info !== undefined) s.hookInfo = hook.info;
      }
      res.upgrade(s, key, offer.protocol, extensions, context);
    };
    if (!this.auth.enabled && !hooks) return accept(ANONYMOUS);
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
      this.admission.cancel(ip);
    });
    const authenticated = this.auth.enabled;
    this.auth
      .authenticate(offer.token)
      .then(
        async (p) => {
          if (aborted) return;
          let hook: ConnectDecision | undefined;
          if (hooks) {
            try {
              hook = await hooks.connect(p, authenticated, ip, hookHeaders);
              p = hook.principal;
            } catch (e) {
              if (aborted) return;
              this.admission.cancel(ip);
              const g = e instanceof GatewayError ? e : new GatewayError(ErrorCode.HookUnavailable, "connect hook failed", { cause: e });
              if (!(e instanceof GatewayError)) this.log.error({ err: e }, "connect hook failed unexpectedly");
              this.metrics.rejected(g.code);
              return res.cork(() => reject(res, g.status, g.code, g.message));
            }
            if (aborted) return;
          }
          if (isDraining()) {
            this.admission.cancel(ip);
            return res.cork(() => reject(res, 503, ErrorCode.ShuttingDown, "server is shutting down"));
          }
          res.cork(() => accept(p, hook));
        },
        (e: unknown) => {
          if (aborted) return;
          this.admission.cancel(ip);
          const reason = e instanceof AuthError ? e.reason : "invalid";
          this.metrics.authFailure(reason);
          this.metrics.rejected("unauthorized");
          if (!(e instanceof AuthError)) this.log.error({ err: e }, "token verification failed unexpectedly");
          res.cork(() => reject(res, 401, ErrorCode.Unauthorized, e instanceof AuthError ? e.message : "token rejected"));
        },
      )
      .catch((e: unknown) => this.log.error({ err: e }, "upgrade failed"));
  }

  /** A socket opened: count it, arm its expiry and its frame allowance. */
  opened(ws: Socket): void {
    const s = ws.getUserData();
    this.admission.opened(s.ip);
    s.frameLimit = frameLimiterFor(this.limits, Date.now());
    this.armExpiry(ws);
  }

  closed(ws: Socket): void {
    const s = ws.getUserData();
    clearTimeout(s.expiryTimer);
    s.expiryTimer = undefined;
    this.admission.closed(s.ip);
  }

  /**
   * Spends one frame of the socket's allowance. Returns true to handle the frame; otherwise the frame is
   * dropped, after an `rate_limited` err (`warn`) or by closing with 4029.
   */
  frameAllowed(ws: Socket, warn: (message: string) => void): boolean {
    const limit = ws.getUserData().frameLimit;
    if (!limit) return true;
    const v = limit.check(Date.now());
    if (v === "ok") return true;
    if (v === "warn") {
      warn(
        `more than ${this.limits.frameRate} frames/s; this frame was dropped, another breach within ${this.limits.frameRateWindowMs} ms closes the connection`,
      );
    } else {
      this.metrics.rateLimitCloses.inc();
      ws.end(CloseCode.RateLimited, "frame rate limit exceeded");
    }
    return false;
  }

  /** Replaces the claims with a new token of the same user; the caller drops `revoked` subscriptions. */
  async refresh(ws: Socket, f: RefreshFrame): Promise<RefreshResult> {
    if (!this.auth.enabled) return { ok: false, code: ErrorCode.BadRequest, message: "authentication is off on this gateway: there is no token to refresh" };
    let p: Principal;
    try {
      p = await this.auth.verify(f.token);
    } catch (e) {
      if (!(e instanceof AuthError)) throw e;
      this.metrics.authFailure(e.reason);
      return { ok: false, code: ErrorCode.Forbidden, message: `refresh refused: ${e.message}` };
    }
    const s = ws.getUserData();
    if (p.user !== s.user) return { ok: false, code: ErrorCode.Forbidden, message: "refresh refused: the token is for another user" };
    if (s.closed) return { ok: true, exp: p.exp, revoked: [] };
    // What the connect hook granted stays granted (the hook is not asked again on refresh).
    if (s.hookGrant) p = applyGrant(p, true, s.hookGrant);
    s.principal = p;
    this.armExpiry(ws);
    return { ok: true, exp: p.exp, revoked: [...s.subs.keys()].filter((pattern) => !canSubscribe(p.perms, pattern)) };
  }

  /** Closes the socket with 4001 when its token expires (exp + clock tolerance), unless refreshed first. */
  private armExpiry(ws: Socket): void {
    const s = ws.getUserData();
    clearTimeout(s.expiryTimer);
    s.expiryTimer = undefined;
    const exp = s.principal.exp;
    if (exp === undefined) return;
    const due = (exp + this.authConfig.jwtClockToleranceSec) * 1000;
    s.expiryTimer = setTimeout(
      () => {
        if (s.closed) return;
        if (Date.now() < due) return this.armExpiry(ws);
        this.metrics.tokenExpiryCloses.inc();
        ws.end(CloseCode.TokenExpired, "token expired; reconnect with a new token");
      },
      Math.min(Math.max(due - Date.now(), 0), MAX_TIMER_MS),
    );
    s.expiryTimer.unref();
  }
}

const STATUS: Record<number, string> = {
  400: "400 Bad Request",
  401: "401 Unauthorized",
  403: "403 Forbidden",
  429: "429 Too Many Requests",
  503: "503 Service Unavailable",
};

/** Answers an upgrade with an HTTP error instead of a WebSocket. */
function reject(res: HttpResponse, status: number, code: string, message: string, retryAfterSec?: number): void {
  res.writeStatus(STATUS[status] ?? `${status} Error`);
  if (status === 401) res.writeHeader("www-authenticate", 'Bearer realm="fanout-gateway", error="invalid_token"');
  if (retryAfterSec !== undefined) res.writeHeader("retry-after", String(retryAfterSec));
  res.writeHeader("content-type", "application/json").end(JSON.stringify({ error: code, message }));
}
