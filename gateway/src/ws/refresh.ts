import { ErrorCode } from "../protocol/codes.js";
import type { RefreshFrame } from "../protocol/frames.js";
import type { HandlerContext } from "./context.js";
import { sendErr, sendFrame, type Socket } from "./session.js";

/**
 * `{"op":"refresh","token":"..."}`: verifies the new token (same `sub`), replaces the claims and the
 * expiry, ends the subscriptions the new claims no longer cover (each with a `forbidden` err naming it),
 * and answers `ok` with the new `exp`.
 */
export async function refreshSession(ctx: HandlerContext, ws: Socket, f: RefreshFrame): Promise<void> {
  const r = await ctx.guard.refresh(ws, f);
  const s = ws.getUserData();
  if (!r.ok) {
    return sendErr(ws, ctx.metrics.badFrames, f.id, r.code, r.message);
  }
  for (const pattern of r.revoked) {
    const sub = s.subs.get(pattern);
    if (!sub) continue;
    ctx.subs.end(ws, sub);
    sendErr(ws, ctx.metrics.badFrames, undefined, ErrorCode.Forbidden, `subscription ${pattern} ended: the refreshed token does not allow it`);
  }
  sendFrame(ws, { op: "ok", id: f.id, fields: r.exp !== undefined ? { exp: r.exp } : {} });
}
