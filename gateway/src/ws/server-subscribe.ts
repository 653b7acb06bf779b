import { brokerFailure, GatewayError } from "../errors.js";
import { resolveStart } from "../fanout/resume.js";
import { ErrorCode } from "../protocol/codes.js";
import type { HandlerContext } from "./context.js";
import { sendFrame, type Socket } from "./session.js";

/**
 * A subscription the server adds to a live connection (the control plane's `subscribe`, Centrifugo's server
 * API `subscribe`): `channel`, optionally recovered from `from` (the first seq wanted, in stream `epoch`), with
 * `info` as what the channel sees of it (Centrifuge's `chan_info`).
 */
export type ServerSubscribeRequest = { channel: string; from?: { seq: number; epoch: string }; info?: unknown };

/**
 * Subscribes one connection as the server asked, on the path of the token's server-side subscriptions
 * (ws/auto-subs.ts): a subscription marked `auto`, announced with `{"op":"sub","channel","auto":true,"seq",
 * "epoch"}` (each door's codec writes it: /ws as that frame, the Centrifuge door as its `subscribe` push), every
 * message after `seq` following. With `from`, `seq` is the position before it when the stream still holds it in
 * that epoch (and within the namespace's resume window): what followed comes through the resume path's catch-up;
 * any other position starts live after the stream's top, as a subscribe that cannot recover does.
 *
 * The chain is the one every subscribe passes (auth/access.ts), with the server's grant in place of the
 * connection's permission (`byServer`): the namespace and its switches (`resume` for a recovery) still apply,
 * and MAX_SUBSCRIPTIONS. Resolves true when subscribed; a GatewayError when refused (the connection is not told:
 * the caller is); false when there was nothing to do (closed, already subscribed).
 */
export async function serverSubscribe(ctx: HandlerContext, ws: Socket, r: ServerSubscribeRequest): Promise<boolean | GatewayError> {
  const s = ws.getUserData();
  if (s.closed || s.subs.has(r.channel)) return false;
  if (ctx.isDraining()) return new GatewayError(ErrorCode.ShuttingDown, "the server is shutting down");
  try {
    await ctx.guard.access.admit(() => s.identity, { right: "sub", channel: r.channel, byServer: true, uses: r.from ? ["resume"] : [] });
  } catch (e) {
    if (e instanceof GatewayError) return e;
    throw e;
  }
  if (r.from && !ctx.broker.replay)
    return new GatewayError(ErrorCode.UnsupportedByBroker, `the ${ctx.broker.kind} broker keeps no history: recover_since needs JetStream`);
  if (s.closed || s.subs.has(r.channel)) return false;
  const max = ctx.config.fanout.maxSubscriptions;
  if (s.subs.size >= max) return new GatewayError(ErrorCode.TooManySubscriptions, `at most ${max} subscriptions per connection`);
  const sub = ctx.subs.begin(ws, r.channel);
  sub.auto = true;
  sub.byServer = true;
  if (r.info !== undefined) sub.info = r.info;
  let feed;
  let lastSent: number | undefined;
  try {
    feed = await ctx.hub.acquire(r.channel);
    if (r.from) {
      const start = await resolveStart(ctx.broker.replay, r.channel, { kind: "after", after: r.from.seq - 1, epoch: r.from.epoch });
      if (start.report?.truncated !== true) lastSent = start.lastSent;
    }
  } catch (e) {
    ctx.subs.end(ws, sub);
    return brokerFailure(e, ctx.broker.isConnected(), `subscribe ${r.channel}`);
  }
  if (!ctx.subs.attach(ws, sub)) return false;
  const epoch = ctx.broker.epochOf(r.channel);
  const announce = (seq: number) => sendFrame(ws, { op: "sub", channel: r.channel, auto: true, seq, ...(epoch ? { epoch } : {}) });
  if (lastSent !== undefined) {
    // Announced first: the catch-up's messages follow it, each after `seq`.
    announce(lastSent);
    sub.life.start(feed, lastSent);
  } else announce(sub.life.start(feed) ?? feed.position());
  return true;
}
