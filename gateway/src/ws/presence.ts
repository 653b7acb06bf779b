import { brokerFailure, GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import type { Id, PresenceFrame, SubFrame } from "../protocol/frames.js";
import type { HandlerContext } from "./context.js";
import { authorized } from "./authorized.js";
import { codecTopic, presenceTopic } from "../fanout/topics.js";
import { clientIdOf, sendErr, sendFrame, type Socket, type SubState } from "./session.js";

function fail(ctx: HandlerContext, ws: Socket, id: Id | undefined, e: GatewayError): void {
  sendErr(ws, ctx.metrics.badFrames, id, e.code, e.message, e.temporary);
}

/**
 * The presence part of a `sub` with `presence`, once its feed is attached: joins the channel's join/leave
 * topic (true, "watch"; first, so that the socket sees its own join), enters the member (true, "member"),
 * and arranges the leave for when the subscription ends. A member's entering and leaving are events (EVENTS:
 * presence.join and presence.leave, an identified user's once per user cluster-wide); a watcher's are none. False when it failed (the subscription is ended and the client answered).
 */
export async function enterPresence(ctx: HandlerContext, ws: Socket, sub: SubState, f: SubFrame): Promise<boolean> {
  const s = ws.getUserData();
  const hub = ctx.presence;
  if (!hub) {
    ctx.subs.end(ws, sub);
    fail(ctx, ws, f.id, new GatewayError(ErrorCode.UnsupportedByBroker, `the ${ctx.broker.kind} broker keeps no presence: presence needs JetStream`));
    return false;
  }
  const client = clientIdOf(ws);
  const topic = codecTopic(presenceTopic(f.channel), s.codec);
  const entering = f.presence !== "watch";
  const events = f.presence !== "member";
  const member = entering
    ? { client, user: s.identity.identified ? s.user : null, ...(f.info !== undefined ? { info: f.info } : {}), joinedAt: Date.now() }
    : undefined;
  const joinTopic = events
    ? () => {
        if (!s.closed && sub.life.phase !== "ended") ws.subscribe(topic);
      }
    : undefined;
  try {
    await hub.join(f.channel, member, joinTopic);
  } catch (e) {
    ctx.subs.end(ws, sub);
    if (!s.closed) ws.unsubscribe(topic);
    fail(ctx, ws, f.id, brokerFailure(e, ctx.broker.isConnected(), "presence join"));
    return false;
  }
  const leave = (): void => {
    hub.leave(f.channel, entering ? client : undefined);
    if (events && !s.closed) ws.unsubscribe(topic);
  };
  if (s.closed || sub.life.phase === "ended") {
    leave();
    return false;
  }
  if (!entering) {
    sub.onEnd = leave;
    return true;
  }
  // A member's events: its join once entered, its leave when the subscription ends (after the subscribe, before the unsubscribe).
  const who = { user: s.user, client, transport: "websocket", channel: f.channel } as const;
  const identified = s.identity.identified;
  ctx.events?.presence(true, who, identified);
  sub.onEnd = () => {
    leave();
    ctx.events?.presence(false, who, identified);
  };
  return true;
}

/** `{"op":"presence","channel":"x"}` → `{"op":"presence","channel":"x","members":[…],"truncated":false}`. */
export async function presenceRequest(ctx: HandlerContext, ws: Socket, f: PresenceFrame): Promise<void> {
  if (!(await authorized(ctx, ws, f.id, { right: "sub", channel: f.channel, uses: ["presence"] }))) return;
  const hub = ctx.presence;
  if (!hub)
    return fail(ctx, ws, f.id, new GatewayError(ErrorCode.UnsupportedByBroker, `the ${ctx.broker.kind} broker keeps no presence: presence needs JetStream`));
  try {
    const r = await hub.members(f.channel);
    sendFrame(ws, { op: "presence", id: f.id, channel: f.channel, members: r.members, truncated: r.truncated });
  } catch (e) {
    fail(ctx, ws, f.id, brokerFailure(e, ctx.broker.isConnected(), "presence"));
  }
}
