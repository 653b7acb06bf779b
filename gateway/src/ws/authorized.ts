import type { Access, ReadGrant } from "../auth/access.js";
import { HookDisconnect } from "../backend/proxy-format.js";
import { GatewayError } from "../errors.js";
import type { Id } from "../protocol/frames.js";
import type { HandlerContext } from "./context.js";
import { endSocket, sendErr, type Socket } from "./session.js";

/**
 * The authorization chain (auth/access.ts) for one frame of a WebSocket: what was granted besides allowing (the
 * subscribe hook's grant, a subscription token's; empty when nothing) when allowed; otherwise false: the client
 * got its `err` (`forbidden`, `hook_unavailable`, `subscription_expired`, with the backend's `appCode` when it
 * gave one), or the socket was closed (a hook answered `disconnect`), or it closed meanwhile. The identity is
 * read again after the chain's awaits: a `refresh` may have replaced it.
 */
export async function authorized(ctx: HandlerContext, ws: Socket, id: Id | undefined, a: Access): Promise<ReadGrant | false> {
  const s = ws.getUserData();
  let grant: ReadGrant;
  try {
    grant = await ctx.guard.access.admit(() => s.identity, a);
  } catch (e) {
    if (!(e instanceof GatewayError)) throw e;
    replyRefusal(ctx, ws, id, e);
    return false;
  }
  return !s.closed && grant;
}

/**
 * Answers a refusal: a hook's `disconnect` closes the socket with its code and reason; anything else is an `err`
 * frame with the error's code, `temporary` and `appCode`.
 */
export function replyRefusal(ctx: HandlerContext, ws: Socket, id: Id | undefined, e: GatewayError): void {
  if (e instanceof HookDisconnect) return endSocket(ws, e.close.code, e.close.reason);
  sendErr(ws, ctx.metrics.badFrames, id, e.code, e.message, e.temporary, e.appCode);
}
