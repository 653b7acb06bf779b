import type { Access, SubscriptionGrant } from "../auth/access.js";
import { GatewayError } from "../errors.js";
import type { Id } from "../protocol/frames.js";
import type { HandlerContext } from "./context.js";
import { sendErr, type Socket } from "./session.js";

/**
 * The authorization chain (auth/access.ts) for one frame of a WebSocket: what a subscription token granted
 * (`grant`, when `a` carried one) when allowed; otherwise false: the client got its `err` (`forbidden`,
 * `hook_unavailable`, `subscription_expired`), or the socket closed meanwhile. The identity is read again
 * after the chain's awaits: a `refresh` may have replaced it.
 */
export async function authorized(ctx: HandlerContext, ws: Socket, id: Id | undefined, a: Access): Promise<false | { grant?: SubscriptionGrant }> {
  const s = ws.getUserData();
  let grant: SubscriptionGrant | undefined;
  try {
    grant = await ctx.guard.access.authorizeRead(() => s.identity, a);
  } catch (e) {
    if (!(e instanceof GatewayError)) throw e;
    sendErr(ws, ctx.metrics.badFrames, id, e.code, e.message, e.temporary);
    return false;
  }
  return !s.closed && (grant ? { grant } : {});
}
