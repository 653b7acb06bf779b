import { subjectOf } from "../auth/access.js";
import { HookDisconnect } from "../backend/proxy-format.js";
import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import type { HandlerContext } from "./context.js";
import { endSocket, sendErr, sendFrame, type Socket, type SubState } from "./session.js";
import { nextExpiry, timerDelayMs, type ExpirySource, type SubExpiry } from "./sub-expiry-rule.js";

/**
 * The one owner of a subscription's end (`sub.expiry`, one timer; the rule in sub-expiry-rule.ts). `source`
 * gives `exp` (unix seconds): a subscription token (at `sub`, or a `sub_refresh` with a new one), or the
 * subscribe hook (at `sub`, or the sub_refresh hook's answer). False when the current expiry stays (a hook's
 * never replaces a token's). The timer is cleared when the subscription ends (Subscriptions.end).
 *
 * When it falls due: a token's ends the subscription alone with `{"op":"unsub",…,"code":"subscription_expired"}`.
 * A hook's asks the sub_refresh hook (SUB_REFRESH_HOOK_URL): a new expiry re-arms it, none lets it run on;
 * without that hook, or when it refuses (`expired`, an error answer) or cannot answer, the subscription ends
 * with an `err` naming it (`forbidden`, or the refusal's own code; `hook_unavailable`, temporary, when the hook
 * did not answer). A `disconnect` answer closes the socket. The connection and its other subscriptions stay.
 */
export function setSubExpiry(ctx: HandlerContext, ws: Socket, sub: SubState, source: ExpirySource, exp: number): boolean {
  const next = nextExpiry(sub.expiry, source, exp, ctx.guard.clockToleranceSec);
  if (!next) return false;
  clearTimeout(sub.expiry?.timer);
  sub.expiry = next;
  arm(ctx, ws, sub, next);
  return true;
}

function arm(ctx: HandlerContext, ws: Socket, sub: SubState, e: SubExpiry): void {
  e.timer = setTimeout(
    () => {
      if (stale(ws, sub, e)) return;
      if (Date.now() < e.dueMs) return arm(ctx, ws, sub, e);
      if (e.source === "token") return endTokenExpired(ctx, ws, sub);
      void askSubRefresh(ctx, ws, sub, e).catch((err: unknown) => ctx.failures.warn("sub_refresh", { err }, "sub_refresh failed"));
    },
    timerDelayMs(e.dueMs, Date.now()),
  );
  e.timer.unref();
}

/** The subscription ended, or its expiry was replaced since `e` was armed. */
function stale(ws: Socket, sub: SubState, e: SubExpiry): boolean {
  const s = ws.getUserData();
  return s.closed || sub.life.phase === "ended" || s.subs.get(sub.pattern) !== sub || sub.expiry !== e;
}

function endTokenExpired(ctx: HandlerContext, ws: Socket, sub: SubState): void {
  ctx.subs.end(ws, sub);
  sendFrame(ws, {
    op: "unsub",
    channel: sub.pattern,
    reason: "the subscription token expired; subscribe again with a new one",
    code: ErrorCode.SubscriptionExpired,
  });
}

async function askSubRefresh(ctx: HandlerContext, ws: Socket, sub: SubState, e: SubExpiry): Promise<void> {
  const hooks = ctx.guard.access.hooks;
  if (!hooks?.subRefreshEnabled) return endHookExpired(ctx, ws, sub, new GatewayError(ErrorCode.Forbidden, "it expired"));
  let outcome;
  try {
    outcome = await hooks.subRefresh(subjectOf(ws.getUserData().identity), sub.pattern);
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    if (stale(ws, sub, e)) return;
    if (err instanceof HookDisconnect) return endSocket(ws, err.close.code, err.close.reason);
    return endHookExpired(ctx, ws, sub, err);
  }
  if (stale(ws, sub, e)) return;
  if (outcome.expired) return endHookExpired(ctx, ws, sub, new GatewayError(ErrorCode.Forbidden, "it expired and the application did not extend it"));
  if (outcome.exp !== undefined) setSubExpiry(ctx, ws, sub, "hook", outcome.exp);
  else sub.expiry = undefined;
}

function endHookExpired(ctx: HandlerContext, ws: Socket, sub: SubState, why: GatewayError): void {
  ctx.subs.end(ws, sub);
  sendErr(ws, ctx.metrics.badFrames, undefined, why.code, `subscription ${sub.pattern} ended: ${why.message}`, why.temporary, why.appCode);
}
