import type { AuthSection, LimitsSection } from "../config/sections/index.js";
import { Admission } from "../limits/admission.js";
import { frameLimiterFor } from "../limits/frame-rate.js";
import type { GuardMetrics } from "../limits/metrics.js";
import type { Logger } from "../log.js";
import { CloseCode, ErrorCode } from "../protocol/codes.js";
import type { RefreshFrame } from "../protocol/frames.js";
import { writeUws, writeUwsError } from "../protocol/http-reply.js";
import { codecOf } from "../protocol/codecs.js";
import type { HttpRequest, HttpResponse, us_socket_context_t } from "../uws.js";
import { endSocket, newClientId, newSession, type Socket } from "./session.js";
import { HookDisconnect } from "../backend/proxy-format.js";
import { AuthError } from "../auth/errors.js";
import type { Principal } from "../auth/principal.js";
import { readUpgradeOffer } from "../auth/upgrade-token.js";
import { applyGrant, type Hooks } from "../auth/hooks.js";
import { anonymousIdentity, refusal, subjectOf, type AccessControl, type Conn, type Identity, type Refusal } from "../auth/access.js";
import { hookHeaders } from "../auth/http-auth.js";

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
    /** The authorization chain every door passes (token, connect hook, permissions, subscribe hook). */
    readonly access: AccessControl,
    private readonly metrics: GuardMetrics,
    private readonly log: Logger,
  ) {
    this.admission = new Admission(limits, metrics, !access.auth.enabled && !access.hooks?.connectEnabled);
    this.admission.start();
  }

  /** JWT_CLOCK_TOLERANCE in seconds: tokens (and subscription tokens) end this long after their `exp`. */
  get clockToleranceSec(): number {
    return this.authConfig.jwtClockToleranceSec;
  }

  /** The uWS upgrade handler: synchronous when nothing identifies users, otherwise runs the chain's first half. */
  upgrade(res: HttpResponse, req: HttpRequest, context: us_socket_context_t, isDraining: () => boolean): void {
    // The uWS request is only valid until this function returns: read all of it first.
    const key = req.getHeader("sec-websocket-key");
    const extensions = req.getHeader("sec-websocket-extensions");
    const page = { origin: req.getHeader("origin"), host: req.getHeader("host") };
    const offer = offerOf(req);
    const coalesce = req.getQuery("coalesce") === "1";
    const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
    const headers = hookHeaders(this.access, req);
    if (isDraining()) return reject(res, 503, ErrorCode.ShuttingDown, "server is shutting down");
    if ("error" in offer) return reject(res, 400, ErrorCode.BadRequest, offer.error);
    const refusal = this.admission.reserve(ip, page);
    if (refusal)
      return reject(
        res,
        refusal.status,
        refusal.status === 403 ? ErrorCode.Forbidden : refusal.status === 429 ? ErrorCode.RateLimited : ErrorCode.ShuttingDown,
        refusal.message,
        refusal.retryAfterSec,
      );
    const codec = codecOf(offer.protocol);
    const conn: Conn = { client: newClientId(), transport: "websocket", protocol: codec.name };
    const accept = (id: Identity, closeOnOpen?: HookDisconnect): void => {
      const session = newSession(id, codec, coalesce);
      if (closeOnOpen) session.closeOnOpen = closeOnOpen.close;
      res.upgrade(session, key, offer.protocol, extensions, context);
    };
    if (!this.access.auth.enabled && !this.access.hooks?.connectEnabled) return accept(anonymousIdentity(ip, conn));
    let aborted = false;
    res.onAborted(() => {
      aborted = true;
      this.admission.cancel(ip);
    });
    this.access
      .identify({ transport: "websocket", ip, token: offer.token, headers, conn })
      .then(
        (id) => {
          if (aborted) return;
          if (isDraining()) {
            this.admission.cancel(ip);
            return res.cork(() => reject(res, 503, ErrorCode.ShuttingDown, "server is shutting down"));
          }
          // Not inside res.cork, unlike every other late write: uWS.js 20.51's cork(), run around an upgrade,
          // takes the socket for still being HTTP when the upgrade's realloc kept its address, reads the old
          // response state from the WebSocket's memory and, when stray bits say "Connection: close", shuts
          // the new socket right after open (1006; uWebSockets #1928, fixed in uWebSockets 20.79). Uncorked,
          // the 101 costs a few more writes; uWS.js warns about it on stderr, and the primary drops that line
          // (instance/worker-stderr.ts).
          accept(id);
        },
        (e: unknown) => {
          if (aborted) return;
          // The connect hook answered `disconnect`: the socket opens and is closed with its code and reason at once.
          if (e instanceof HookDisconnect && !isDraining()) return accept(anonymousIdentity(ip, conn), e);
          this.admission.cancel(ip);
          const r = refusalOf(e, this.metrics, this.log);
          res.cork(() => reject(res, r.status, r.code, r.message));
        },
      )
      .catch((e: unknown) => this.log.error({ err: e }, "upgrade failed"));
  }

  /**
   * `GET /ws` without an upgrade: what the upgrade would answer, its refusal (the same status and body) or
   * 426 when it would be let in. A WebSocket API does not show a refused upgrade's answer, so the SDK asks
   * here after one failed. Nothing is reserved or counted (the connection limits are left out: no connection
   * is made); CORS headers let a page of any origin read the answer, and a preflight for `Authorization` is
   * granted (`preflight`).
   */
  probe(res: HttpResponse, req: HttpRequest, isDraining: () => boolean): void {
    const offer = offerOf(req);
    const [origin, host] = [req.getHeader("origin"), req.getHeader("host")];
    const ip = Buffer.from(res.getRemoteAddressAsText()).toString();
    const headers = hookHeaders(this.access, req);
    const cors = origin ? { "access-control-allow-origin": origin, vary: "origin" } : undefined;
    const refuse = (status: number, code: ErrorCode, message: string): void => writeUwsError(res, { status, code, message }, cors);
    if (isDraining()) return refuse(503, ErrorCode.ShuttingDown, "server is shutting down");
    if ("error" in offer) return refuse(400, ErrorCode.BadRequest, offer.error);
    if (!this.admission.allowsOrigin(origin, host)) return refuse(403, ErrorCode.Forbidden, `origin ${origin.slice(0, 200)} is not allowed (ALLOWED_ORIGINS)`);
    let aborted = false;
    res.onAborted(() => (aborted = true));
    this.access.identify({ transport: "websocket", ip, token: offer.token, headers }).then(
      () => {
        if (aborted) return;
        const message = `${WS_UPGRADE_HINT}; this request's token and origin would be let in`;
        res.cork(() =>
          writeUws(res, 426, JSON.stringify({ error: ErrorCode.BadRequest, message, temporary: false }), "application/json", { upgrade: "websocket", ...cors }),
        );
      },
      (e: unknown) => {
        if (aborted) return;
        const r = refusal(e);
        res.cork(() => refuse(r.status, r.code, r.message));
      },
    );
  }

  /** `OPTIONS /ws`: the CORS preflight of a page's `probe` with `Authorization` (the SDK's token), for an allowed origin. */
  preflight(res: HttpResponse, req: HttpRequest): void {
    const [origin, host] = [req.getHeader("origin"), req.getHeader("host")];
    if (!origin || !this.admission.allowsOrigin(origin, host)) return writeUws(res, 204, "", "text/plain");
    writeUws(res, 204, "", "text/plain", {
      "access-control-allow-origin": origin,
      "access-control-allow-methods": "GET",
      "access-control-allow-headers": "authorization",
      "access-control-max-age": "600",
      vary: "origin",
    });
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
      endSocket(ws, CloseCode.RateLimited, "frame rate limit exceeded");
    }
    return false;
  }

  /** Replaces the claims with a new token of the same user; the caller drops `revoked` subscriptions. */
  async refresh(ws: Socket, f: RefreshFrame): Promise<RefreshResult> {
    if (!this.access.auth.enabled)
      return { ok: false, code: ErrorCode.BadRequest, message: "authentication is off on this gateway: there is no token to refresh" };
    let p: Principal;
    try {
      p = await this.access.auth.verify(f.token);
    } catch (e) {
      if (!(e instanceof AuthError)) throw e;
      this.metrics.authFailure(e.reason);
      return { ok: false, code: ErrorCode.Forbidden, message: `refresh refused: ${e.message}` };
    }
    const s = ws.getUserData();
    if (p.user !== s.user) return { ok: false, code: ErrorCode.Forbidden, message: "refresh refused: the token is for another user" };
    if (s.closed) return { ok: true, exp: p.exp, revoked: [] };
    // What the connect hook granted stays granted (the hook is not asked again on refresh); so does an expiry it set or the refresh hook extended.
    if (s.identity.grant) p = applyGrant(p, true, s.identity.grant);
    s.identity = { ...s.identity, principal: p };
    this.armExpiry(ws);
    // A subscription a subscription token or the server granted stands on that grant, not on the connection's claims.
    const revoked = [...s.subs.values()].filter(
      (sub) => sub.expiry?.source !== "token" && sub.byServer !== true && !this.access.permits(p, { right: "sub", channel: sub.pattern }),
    );
    return { ok: true, exp: p.exp, revoked: revoked.map((sub) => sub.pattern) };
  }

  /**
   * At the connection's expiry (the token's `exp`, or the connect hook's, + clock tolerance): asks the refresh
   * hook when REFRESH_HOOK_URL is set (a new expiry re-arms), otherwise, or when it refuses or cannot answer,
   * closes with 4001 (a `disconnect` answer: with its code), unless the client's `refresh` came first.
   */
  private armExpiry(ws: Socket): void {
    const s = ws.getUserData();
    clearTimeout(s.expiryTimer);
    s.expiryTimer = undefined;
    const exp = s.identity.principal.exp;
    if (exp === undefined) return;
    const due = (exp + this.authConfig.jwtClockToleranceSec) * 1000;
    s.expiryTimer = setTimeout(
      () => {
        if (s.closed) return;
        if (Date.now() < due) return this.armExpiry(ws);
        const hooks = this.access.hooks;
        if (hooks?.refreshEnabled) return void this.askRefresh(ws, hooks, exp).catch((e: unknown) => this.log.error({ err: e }, "refresh hook failed"));
        this.expired(ws, "token expired; reconnect with a new token");
      },
      Math.min(Math.max(due - Date.now(), 0), MAX_TIMER_MS),
    );
    s.expiryTimer.unref();
  }

  /** Asks the refresh hook about a connection whose expiry `exp` came; answers as armExpiry says. */
  private async askRefresh(ws: Socket, hooks: Hooks, exp: number): Promise<void> {
    const s = ws.getUserData();
    let outcome;
    try {
      outcome = await hooks.refresh(subjectOf(s.identity));
    } catch (e) {
      if (s.closed) return;
      if (e instanceof HookDisconnect) return endSocket(ws, e.close.code, e.close.reason);
      return this.expired(ws, `the connection expired and could not be refreshed: ${(e as Error).message}`);
    }
    // The client's own `refresh` (a new token) came meanwhile: it decides.
    if (s.closed || s.identity.principal.exp !== exp) return;
    if (outcome.expired) return this.expired(ws, "the connection expired: the application did not extend it");
    const grant = s.identity.grant && withExp(s.identity.grant, outcome.exp);
    // An `info` the hook gave is what the connection shows of itself from now on (connectionInfo).
    const principal = withExp(s.identity.principal, outcome.exp);
    s.identity = {
      ...s.identity,
      principal: outcome.info !== undefined ? Object.freeze({ ...principal, info: outcome.info }) : principal,
      ...(grant ? { grant } : {}),
    };
    this.armExpiry(ws);
  }

  /** Closes an expired connection with 4001. */
  private expired(ws: Socket, reason: string): void {
    this.metrics.tokenExpiryCloses.inc();
    endSocket(ws, CloseCode.TokenExpired, closeReasonOf(reason));
  }
}

/** `o` with `exp` replaced (undefined: none), frozen. */
function withExp<T extends { exp?: number }>(o: T, exp: number | undefined): T {
  const { exp: _, ...rest } = o;
  return Object.freeze(exp === undefined ? rest : { ...rest, exp }) as T;
}

/** A close reason cut to the 123 bytes a close frame holds. */
function closeReasonOf(reason: string): string {
  let r = reason;
  while (Buffer.byteLength(r) > 123) r = r.slice(0, -1);
  return r;
}

/** What a failure of the chain answers (auth/access.ts), counted in the guard's metrics. */
function refusalOf(e: unknown, metrics: GuardMetrics, log: Logger): Refusal {
  const r = refusal(e);
  if (e instanceof AuthError) metrics.authFailure(e.reason);
  else if (r.code === ErrorCode.Internal) log.error({ err: e }, "authorization failed unexpectedly");
  metrics.rejected(r.code);
  return r;
}

const WS_UPGRADE_HINT = "GET /ws takes a WebSocket upgrade (Upgrade: websocket)";

/** The token and subprotocol an upgrade (or its probe) offers. */
function offerOf(req: HttpRequest): ReturnType<typeof readUpgradeOffer> {
  return readUpgradeOffer({
    authorization: req.getHeader("authorization"),
    protocols: req.getHeader("sec-websocket-protocol"),
    queryToken: req.getQuery("token"),
  });
}

/** Answers an upgrade with an HTTP error instead of a WebSocket. */
function reject(res: HttpResponse, status: number, code: ErrorCode, message: string, retryAfterSec?: number): void {
  writeUwsError(res, { status, code, message, ...(retryAfterSec !== undefined ? { retryAfterSec } : {}) });
}
