import type { SubscriptionGrant } from "../auth/access.js";
import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import type { SubRefreshFrame } from "../protocol/frames.js";
import type { HandlerContext } from "./context.js";
import { sendErr, sendFrame, type Socket } from "./session.js";
import { setSubExpiry } from "./sub-expiry.js";
import { refreshableByToken } from "./sub-expiry-rule.js";

/**
 * `{"op":"sub_refresh","channel":…,"token":…}`: a new token for a subscription a token granted, checked as
 * at `sub` (the same channel and user): it moves the subscription's end (ws/sub-expiry.ts) to the new token's
 * `exp`, answered `ok` with it. A refused one leaves the subscription until its current token's expiry; a
 * subscription no token granted (its end, if any, is the subscribe hook's) is answered `bad_request`.
 */
export async function refreshSubscription(ctx: HandlerContext, ws: Socket, f: SubRefreshFrame): Promise<void> {
  const s = ws.getUserData();
  const sub = s.subs.get(f.channel);
  if (!sub) return sendErr(ws, ctx.metrics.badFrames, f.id, ErrorCode.NotSubscribed, `not subscribed to ${f.channel}`);
  if (!refreshableByToken(sub.expiry))
    return sendErr(ws, ctx.metrics.badFrames, f.id, ErrorCode.BadRequest, `the subscription to ${f.channel} was not granted by a subscription token`);
  let grant: SubscriptionGrant;
  try {
    grant = await ctx.guard.access.subscriptionGrant(s.identity, f.channel, f.token);
  } catch (e) {
    if (!(e instanceof GatewayError)) throw e;
    return sendErr(ws, ctx.metrics.badFrames, f.id, e.code, e.message, e.temporary);
  }
  if (s.closed || s.subs.get(f.channel) !== sub) return sendErr(ws, ctx.metrics.badFrames, f.id, ErrorCode.NotSubscribed, `not subscribed to ${f.channel}`);
  setSubExpiry(ctx, ws, sub, "token", grant.exp);
  sendFrame(ws, { op: "ok", id: f.id, fields: { exp: grant.exp } });
}
