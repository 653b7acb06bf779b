import type { Broker } from "../broker/broker.js";
import type { Config } from "../config/config.js";
import type { FanoutHub } from "../fanout/hub.js";
import { topicOf } from "../fanout/hub.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { ErrorCode } from "../protocol/codes.js";
import { parseClientFrame, type Id, type PubFrame, type SubFrame, type UnsubFrame } from "../protocol/frames.js";
import { errFrame, okFrame, pongFrame } from "../protocol/serialize.js";
import { publishOnce, PublishFailure } from "../http/publish.js";
import { sendText, type Socket } from "./session.js";

export type HandlerContext = {
  config: Config;
  broker: Broker;
  hub: FanoutHub;
  metrics: Metrics;
  log: Logger;
  isDraining: () => boolean;
};

/** Handles one text frame from a client. Every failure becomes an `err` frame; the socket stays open. */
export function handleFrame(ctx: HandlerContext, ws: Socket, text: string): void {
  const parsed = parseClientFrame(text);
  if (!parsed.ok) return replyErr(ctx, ws, parsed.id, parsed.code, parsed.message);
  const f = parsed.frame;
  switch (f.op) {
    case "ping": return sendText(ws, pongFrame(f.id));
    case "sub": return void subscribe(ctx, ws, f);
    case "unsub": return unsubscribe(ctx, ws, f);
    case "pub": return void publish(ctx, ws, f);
    default: return replyErr(ctx, ws, f.id, ErrorCode.UnsupportedByBroker, `op ${f.op} is not available on this gateway`);
  }
}

export function replyErr(ctx: HandlerContext, ws: Socket, id: Id | undefined, code: ErrorCode, message: string): void {
  ctx.metrics.badFrames.labels(code).inc();
  sendText(ws, errFrame(id, code, message));
}

async function subscribe(ctx: HandlerContext, ws: Socket, f: SubFrame): Promise<void> {
  const s = ws.getUserData();
  if (ctx.isDraining()) return replyErr(ctx, ws, f.id, ErrorCode.ShuttingDown, "server is shutting down; reconnect");
  if (s.subs.has(f.channel)) return replyErr(ctx, ws, f.id, ErrorCode.AlreadySubscribed, `already subscribed to ${f.channel}`);
  if (s.subs.size >= ctx.config.maxSubscriptions) return replyErr(ctx, ws, f.id, ErrorCode.TooManySubscriptions, `at most ${ctx.config.maxSubscriptions} subscriptions per connection`);
  if (f.from !== undefined || f.durable !== undefined || f.ack) {
    return replyErr(ctx, ws, f.id, ErrorCode.UnsupportedByBroker, "start positions and durable subscriptions are not available on this gateway");
  }
  const sub = { pattern: f.channel, topic: topicOf(f.channel), pending: true, cancelled: false, pausedAtCount: 0 };
  s.subs.set(f.channel, sub);
  try {
    await ctx.hub.acquire(f.channel);
  } catch (e) {
    if (s.subs.get(f.channel) === sub) s.subs.delete(f.channel);
    const down = !ctx.broker.isConnected();
    return replyErr(ctx, ws, f.id, down ? ErrorCode.BrokerUnavailable : ErrorCode.BrokerError, down ? "broker is not connected; retry" : `subscribe failed: ${(e as Error).message}`);
  }
  sub.pending = false;
  if (s.closed || sub.cancelled) {
    ctx.hub.release(f.channel);
    return;
  }
  if (s.paused) sub.pausedAtCount = ctx.hub.get(f.channel)?.count ?? 0;
  else ws.subscribe(sub.topic);
  ctx.metrics.subscriptions.inc();
  sendText(ws, okFrame(f.id));
}

function unsubscribe(ctx: HandlerContext, ws: Socket, f: UnsubFrame): void {
  const s = ws.getUserData();
  const sub = s.subs.get(f.channel);
  if (!sub) return replyErr(ctx, ws, f.id, ErrorCode.NotSubscribed, `not subscribed to ${f.channel}`);
  s.subs.delete(f.channel);
  if (sub.pending) {
    sub.cancelled = true;
  } else {
    ws.unsubscribe(sub.topic);
    ctx.hub.release(f.channel);
    ctx.metrics.subscriptions.dec();
  }
  sendText(ws, okFrame(f.id));
}

/** Releases everything a closed socket held. */
export function releaseSession(ctx: HandlerContext, ws: Socket): void {
  const s = ws.getUserData();
  for (const sub of s.subs.values()) {
    if (sub.pending) {
      sub.cancelled = true;
      continue;
    }
    ctx.hub.release(sub.pattern);
    ctx.metrics.subscriptions.dec();
  }
  s.subs.clear();
}

async function publish(ctx: HandlerContext, ws: Socket, f: PubFrame): Promise<void> {
  try {
    const r = await publishOnce(ctx, "ws", f.channel, f.data, f.msgId);
    sendText(ws, okFrame(f.id, { seq: r.seq, duplicate: r.duplicate }));
  } catch (e) {
    if (e instanceof PublishFailure) return replyErr(ctx, ws, f.id, e.wireCode, e.message);
    throw e;
  }
}
