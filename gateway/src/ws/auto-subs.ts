import { brokerFailure } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import type { HandlerContext } from "./context.js";
import { sendErr, sendFrame, type Socket } from "./session.js";

/**
 * Server-side subscriptions: the token's `channels.auto` (or a connect hook's) lists patterns the connection
 * is subscribed to when it opens, without a `sub` frame — every user's own inbox, typically. Each one is live
 * from the feed's position at that moment, told to the client as `{"op":"sub","channel":P,"auto":true,
 * "seq":S,"epoch":E}`: every matching message after S follows. A client resuming after a reconnect sends
 * its own `sub` for P with `from:{seq,epoch}`, which takes the auto subscription over (subscribe() ends it
 * first); frames of the auto one it sees before that `ok` are older than the `ok` and may be dropped.
 */
export async function startAutoSubscriptions(ctx: HandlerContext, ws: Socket): Promise<void> {
  const auto = ws.getUserData().identity.principal.perms.auto;
  if (!auto || auto.length === 0 || ctx.isDraining()) return;
  await Promise.all(auto.map((pattern) => autoSubscribe(ctx, ws, pattern)));
}

async function autoSubscribe(ctx: HandlerContext, ws: Socket, pattern: string): Promise<void> {
  const s = ws.getUserData();
  if (s.closed || s.subs.has(pattern)) return;
  const max = ctx.config.fanout.maxSubscriptions;
  if (s.subs.size >= max)
    return sendErr(
      ws,
      ctx.metrics.badFrames,
      undefined,
      ErrorCode.TooManySubscriptions,
      `auto subscription ${pattern}: at most ${max} subscriptions per connection`,
    );
  const sub = ctx.subs.begin(ws, pattern);
  sub.auto = true;
  let feed;
  try {
    feed = await ctx.hub.acquire(pattern);
  } catch (e) {
    ctx.subs.end(ws, sub);
    const f = brokerFailure(e, ctx.broker.isConnected(), `auto subscription ${pattern}`);
    return sendErr(ws, ctx.metrics.badFrames, undefined, f.code, `${f.message}; reconnect`, f.temporary);
  }
  if (!ctx.subs.attach(ws, sub)) return;
  // Position and join in one synchronous step (the resume path's live start): every message after `seq` follows.
  const seq = sub.life.start(feed) ?? feed.position();
  const epoch = ctx.broker.epochOf(pattern);
  sendFrame(ws, { op: "sub", channel: pattern, auto: true, seq, ...(epoch ? { epoch } : {}) });
}
