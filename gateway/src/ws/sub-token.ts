import type { SubscriptionGrant } from "../auth/access.js";
import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import type { SubRefreshFrame } from "../protocol/frames.js";
import type { HandlerContext } from "./context.js";
import { sendErr, sendFrame, type Socket, type SubState } from "./session.js";

/** setTimeout's longest delay; later expiries re-arm. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A subscription a token granted lasts until the token's `exp` (plus JWT_CLOCK_TOLERANCE): then it alone
 * ends, with `{"op":"unsub","channel":…,"code":"subscription_expired"}`, unless a `sub_refresh` moved it.
 * The connection and its other subscriptions stay.
 */
export function armSubscriptionExpiry(ctx: HandlerContext, ws: Socket, sub: SubState, grant: SubscriptionGrant): void {
  clearTimeout(sub.tokenTimer);
  sub.tokenExp = grant.exp;
  const due = (grant.exp + ctx.guard.clockToleranceSec) * 1000;
  sub.tokenTimer = setTimeout(
    () => {
      const s = ws.getUserData();
      if (s.closed || s.subs.get(sub.pattern) !== sub || sub.tokenExp !== grant.exp) return;
      if (Date.now() < due) return armSubscriptionExpiry(ctx, ws, sub, grant);
      ctx.subs.end(ws, sub);
      sendFrame(ws, {
        op: "unsub",
        channel: sub.pattern,
        reason: "the subscription token expired; subscribe again with a new one",
        code: ErrorCode.SubscriptionExpired,
      });
    },
    Math.min(Math.max(due - Date.now(), 0), MAX_TIMER_MS),
  );
  sub.tokenTimer.unref();
}

/**
 * `{"op":"sub_refresh","channel":…,"token":…}`: a new token for a subscription a token granted, checked as
 * at `sub` (the same channel and user); `ok` with its `exp`. A refused one leaves the subscription until
 * its current token's expiry.
 */
export async function refreshSubscription(ctx: HandlerContext, ws: Socket, f: SubRefreshFrame): Promise<void> {
  const s = ws.getUserData();
  const sub = s.subs.get(f.channel);
  if (!sub) return sendErr(ws, ctx.metrics.badFrames, f.id, ErrorCode.NotSubscribed, `not subscribed to ${f.channel}`);
  if (sub.tokenExp === undefined)
    return sendErr(ws, ctx.metrics.badFrames, f.id, ErrorCode.BadRequest, `the subscription to ${f.channel} was not granted by a subscription token`);
  let grant: SubscriptionGrant;
  try {
    grant = await ctx.guard.access.subscriptionGrant(s.identity, f.channel, f.token);
  } catch (e) {
    if (!(e instanceof GatewayError)) throw e;
    return sendErr(ws, ctx.metrics.badFrames, f.id, e.code, e.message, e.temporary);
  }
  if (s.closed || s.subs.get(f.channel) !== sub) return sendErr(ws, ctx.metrics.badFrames, f.id, ErrorCode.NotSubscribed, `not subscribed to ${f.channel}`);
  armSubscriptionExpiry(ctx, ws, sub, grant);
  sendFrame(ws, { op: "ok", id: f.id, fields: { exp: grant.exp } });
}
