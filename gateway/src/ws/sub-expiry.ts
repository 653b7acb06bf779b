import { subjectOf } from "../auth/access.js";
import { HookDisconnect } from "../backend/proxy-format.js";
import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import type { HandlerContext } from "./context.js";
import { endSocket, sendErr, type Socket, type SubState } from "./session.js";

/** setTimeout's longest delay; later expiries re-arm. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A subscription the subscribe hook gave an expiry (`exp`, unix seconds): at that time the sub_refresh hook is
 * asked (SUB_REFRESH_HOOK_URL) and a new expiry re-arms it, none lets it run on; without that hook, or when it
 * refuses (`expired`, an error answer) or cannot answer, the subscription ends with an `err` naming it
 * (`forbidden`, or the refusal's own code; `hook_unavailable`, temporary, when the hook did not answer). A
 * `disconnect` answer closes the socket. The timer is cleared when the subscription ends.
 */
export function armSubExpiry(ctx: HandlerContext, ws: Socket, sub: SubState, exp: number): void {
  clearTimeout(sub.expiryTimer);
  const due = exp * 1000;
  sub.expiryTimer = setTimeout(
    () => {
      if (ended(ws, sub)) return;
      if (Date.now() < due) return armSubExpiry(ctx, ws, sub, exp);
      void askSubRefresh(ctx, ws, sub).catch((e: unknown) => ctx.failures.warn("sub_refresh", { err: e }, "sub_refresh failed"));
    },
    Math.min(Math.max(due - Date.now(), 0), MAX_TIMER_MS),
  );
  sub.expiryTimer.unref();
}

const ended = (ws: Socket, sub: SubState): boolean => ws.getUserData().closed || sub.life.phase === "ended";

async function askSubRefresh(ctx: HandlerContext, ws: Socket, sub: SubState): Promise<void> {
  const hooks = ctx.guard.access.hooks;
  if (!hooks?.subRefreshEnabled) return endExpired(ctx, ws, sub, new GatewayError(ErrorCode.Forbidden, "it expired"));
  let outcome;
  try {
    outcome = await hooks.subRefresh(subjectOf(ws.getUserData().identity), sub.pattern);
  } catch (e) {
    if (!(e instanceof GatewayError)) throw e;
    if (ended(ws, sub)) return;
    if (e instanceof HookDisconnect) return endSocket(ws, e.close.code, e.close.reason);
    return endExpired(ctx, ws, sub, e);
  }
  if (ended(ws, sub)) return;
  if (outcome.expired) return endExpired(ctx, ws, sub, new GatewayError(ErrorCode.Forbidden, "it expired and the application did not extend it"));
  if (outcome.exp !== undefined) armSubExpiry(ctx, ws, sub, outcome.exp);
}

function endExpired(ctx: HandlerContext, ws: Socket, sub: SubState, why: GatewayError): void {
  ctx.subs.end(ws, sub);
  sendErr(ws, ctx.metrics.badFrames, undefined, why.code, `subscription ${sub.pattern} ended: ${why.message}`, why.temporary, why.appCode);
}
