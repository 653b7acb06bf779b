import { DurableSub } from "../fanout/durable-sub.js";
import { resolveStart, startFeatures, type Start, type StartRequest } from "../fanout/resume.js";
import type { Feature } from "../namespaces/spec.js";
import { ErrorCode } from "../protocol/codes.js";
import {
  validateClientFrame,
  type AckFrame,
  type Decoded,
  type Id,
  type PubBatchFrame,
  type PubFrame,
  type SubFrame,
  type UnsubFrame,
} from "../protocol/frames.js";
import { serverTime } from "../protocol/server-frames.js";
import { publisherInfo } from "../protocol/publisher-info.js";
import { sendLastValues } from "../fanout/last-values.js";
import { brokerFailure, GatewayError } from "../errors.js";
import { clientIdOf, fanoutSocket, sendErr, sendFrame, type Socket, type SubState } from "./session.js";
import type { PublishedBy } from "../publish/service.js";
import { connectionInfo, publishedBy } from "../auth/access.js";
import type { HandlerContext } from "./context.js";
import { authorized, replyRefusal } from "./authorized.js";
import { setSubExpiry } from "./sub-expiry.js";
import type { SubscribeGrant } from "../auth/hooks.js";
import { refreshSession } from "./refresh.js";
import { refreshSubscription } from "./sub-token.js";
import type { ReadGrant } from "../auth/access.js";
import { enterPresence, presenceRequest } from "./presence.js";
import { callRpc } from "./rpc.js";

export type { HandlerContext };

/** Handles one decoded frame from a client. Every failure becomes an `err` frame; the socket stays open. */
export function handleFrame(ctx: HandlerContext, ws: Socket, decoded: Extract<Decoded, { ok: true }>): void {
  const parsed = validateClientFrame(decoded.value, decoded.mayNotFitJson);
  if (!parsed.ok) return replyErr(ctx, ws, parsed.id, parsed.code, parsed.message);
  const f = parsed.frame;
  switch (f.op) {
    case "ping":
      return sendFrame(ws, { op: "pong", id: f.id, time: serverTime() });
    case "sub":
      return void subscribe(ctx, ws, f).catch((e) => internalError(ctx, ws, f, e));
    case "unsub":
      return unsubscribe(ctx, ws, f);
    case "pub":
      return void publish(ctx, ws, f).catch((e) => internalError(ctx, ws, f, e));
    case "ack":
    case "nak":
    case "term":
    case "inprogress":
      return settle(ctx, ws, f);
    case "refresh":
      return void refreshSession(ctx, ws, f).catch((e) => internalError(ctx, ws, f, e));
    case "sub_refresh":
      return void refreshSubscription(ctx, ws, f).catch((e) => internalError(ctx, ws, f, e));
    case "presence":
      return void presenceRequest(ctx, ws, f).catch((e) => internalError(ctx, ws, f, e));
    case "rpc":
      return void callRpc(ctx, ws, f).catch((e) => internalError(ctx, ws, f, e));
  }
}

export function replyErr(ctx: HandlerContext, ws: Socket, id: Id | undefined, code: ErrorCode, message: string, temporary?: boolean): void {
  sendErr(ws, ctx.metrics.badFrames, id, code, message, temporary);
}

/** Answers a failure as an `err` frame with its code and whether retrying helps (a hook's `disconnect` closes the socket). */
function replyFailure(ctx: HandlerContext, ws: Socket, id: Id | undefined, e: GatewayError): void {
  replyRefusal(ctx, ws, id, e);
}

function internalError(ctx: HandlerContext, ws: Socket, f: { op: string; id?: Id }, e: unknown): void {
  ctx.failures.warn(f.op, { err: e }, "request failed");
  replyErr(ctx, ws, f.id, ErrorCode.Internal, "internal error");
}

async function subscribe(ctx: HandlerContext, ws: Socket, f: SubFrame): Promise<void> {
  const s = ws.getUserData();
  if (ctx.isDraining()) return replyErr(ctx, ws, f.id, ErrorCode.ShuttingDown, "server is shutting down; reconnect");
  // A sub taking over a server-side subscription (the SDK's resume) was granted by the token or connect hook.
  const serverSide = s.subs.get(f.channel)?.auto === true;
  const uses: Feature[] = f.durable !== undefined || f.ack ? ["durables"] : f.from !== undefined ? startFeatures(startRequest(f.from)) : [];
  if (f.presence) uses.push("presence");
  const access = {
    right: "sub",
    channel: f.channel,
    ...(f.durable !== undefined ? { durable: f.durable } : {}),
    ...(f.token !== undefined ? { token: f.token } : {}),
    serverSide,
    uses,
  } as const;
  const allowed = await authorized(ctx, ws, f.id, access);
  if (!allowed) return;
  // From here on the subscription is in s.subs, where a refresh that drops the right finds and ends it.
  const existing = s.subs.get(f.channel);
  // A server-side subscription is taken over by the client's own (a resume with from:{seq,epoch}).
  if (existing?.auto) ctx.subs.end(ws, existing);
  else if (existing) return replyErr(ctx, ws, f.id, ErrorCode.AlreadySubscribed, `already subscribed to ${f.channel}`);
  if (s.subs.size >= ctx.config.fanout.maxSubscriptions)
    return replyErr(ctx, ws, f.id, ErrorCode.TooManySubscriptions, `at most ${ctx.config.fanout.maxSubscriptions} subscriptions per connection`);
  if (f.durable !== undefined || f.ack) return subscribeDurable(ctx, ws, f, allowed);
  if (f.from !== undefined && !ctx.broker.replay)
    return replyErr(ctx, ws, f.id, ErrorCode.UnsupportedByBroker, `the ${ctx.broker.kind} broker keeps no history: start positions need JetStream`);

  const sub = ctx.subs.begin(ws, f.channel, f.delta === "fossil");
  if (allowed.token) setSubExpiry(ctx, ws, sub, "token", allowed.token.exp);
  if (allowed.token?.info !== undefined) sub.info = allowed.token.info;
  let feed;
  try {
    feed = await ctx.hub.acquire(f.channel);
  } catch (e) {
    ctx.subs.end(ws, sub);
    return replyFailure(ctx, ws, f.id, brokerFailure(e, ctx.broker.isConnected(), "subscribe"));
  }
  if (!ctx.subs.attach(ws, sub)) return;
  // A subscription token's `info` is what the channel's members see of this one (the backend's, not the client's).
  const member = allowed.token?.info !== undefined ? { ...f, info: allowed.token.info } : f;
  if (f.presence && !(await enterPresence(ctx, ws, sub, member))) return;
  const presence = f.presence ? { client: s.clientId } : undefined;
  const delta = f.delta ? { delta: f.delta } : undefined;
  // A subscription token's expiry (its `exp`, or `expire_at` when it has one): when the client must send `sub_refresh`.
  const data = { ...granted(ctx, ws, sub, allowed.hook), ...(allowed.token ? { exp: allowed.token.exp } : {}) };
  if (f.from === undefined) {
    sub.life.start(feed);
    return sendFrame(ws, { op: "ok", id: f.id, fields: { epoch: ctx.broker.epochOf(f.channel), ...presence, ...delta, ...data } });
  }
  let start: Start;
  try {
    start = await resolveStart(ctx.broker.replay, f.channel, startRequest(f.from));
  } catch (e) {
    // end() is idempotent: an unsub that came first already released the subscription.
    ctx.subs.end(ws, sub);
    return replyFailure(ctx, ws, f.id, brokerFailure(e, ctx.broker.isConnected(), "replay"));
  }
  if (s.closed || sub.life.phase === "ended") return;
  const lastSent = start.lastSent ?? 0;
  sendFrame(ws, { op: "ok", id: f.id, fields: { ...start.report, ...presence, ...delta, ...data } });
  if (f.from === "last_per_subject" && !(await sendSnapshot(ctx, ws, sub, lastSent))) return;
  sub.life.start(feed, lastSent);
}

/** Arms the subscription's expiry the subscribe hook gave; the `data` it gave for the `ok`, as its field. */
function granted(ctx: HandlerContext, ws: Socket, sub: SubState, grant: SubscribeGrant | undefined): { data?: unknown } {
  if (grant === undefined) return {};
  if (grant.exp !== undefined) setSubExpiry(ctx, ws, sub, "hook", grant.exp);
  return grant.data !== undefined ? { data: grant.data } : {};
}

/** The `from` of a `sub` frame as the resume path's start request (`seq` is the first one wanted). */
function startRequest(from: NonNullable<SubFrame["from"]>): StartRequest {
  if (from === "all") return { kind: "all" };
  if (from === "last_per_subject") return { kind: "lastPerSubject" };
  if ("time" in from) return { kind: "time", time: from.time };
  if ("last" in from) return { kind: "last", last: from.last };
  return { kind: "after", after: from.seq - 1, ...(from.epoch !== undefined ? { epoch: from.epoch } : {}) };
}

/** `from:"last_per_subject"`: the newest message of each channel up to `upTo`; false when the subscription ended. */
async function sendSnapshot(ctx: HandlerContext, ws: Socket, sub: SubState, upTo: number): Promise<boolean> {
  const replay = ctx.broker.replay;
  const lastPerSubject = replay?.lastPerSubject?.bind(replay);
  if (!lastPerSubject) {
    ctx.subs.end(ws, sub);
    replyErr(ctx, ws, undefined, ErrorCode.UnsupportedByBroker, `the ${ctx.broker.kind} broker cannot read the last value of each channel`);
    return false;
  }
  const ended = () => ws.getUserData().closed || sub.life.phase === "ended";
  try {
    const r = await sendLastValues(
      fanoutSocket(ws),
      { lastPerSubject },
      sub.pattern,
      upTo,
      ctx.config.backpressure.bytes >> 2,
      ended,
      ctx.config.fanout.catchupDeadlineMs,
    );
    if (r.dropped) {
      ctx.subs.end(ws, sub);
      replyErr(ctx, ws, undefined, ErrorCode.Internal, `last values of ${sub.pattern} overflowed the socket's buffer; subscribe again`);
    }
    return !r.stopped;
  } catch (e) {
    ctx.subs.end(ws, sub);
    const f = brokerFailure(e, ctx.broker.isConnected(), `last values of ${sub.pattern}`);
    replyErr(ctx, ws, undefined, f.code, `${f.message}; subscribe again`, f.temporary);
    return false;
  }
}

async function subscribeDurable(ctx: HandlerContext, ws: Socket, f: SubFrame, grant: ReadGrant): Promise<void> {
  const s = ws.getUserData();
  const durables = ctx.broker.durables;
  if (!durables)
    return replyErr(
      ctx,
      ws,
      f.id,
      ErrorCode.UnsupportedByBroker,
      `the ${ctx.broker.kind} broker has no durable consumers: durable subscriptions need JetStream`,
    );
  if (f.durable === undefined) return replyErr(ctx, ws, f.id, ErrorCode.BadRequest, "ack:true needs a durable name");
  if (f.ack === false) return replyErr(ctx, ws, f.id, ErrorCode.BadRequest, "durable subscriptions are acknowledged: ack must be true");
  if (f.from !== undefined) return replyErr(ctx, ws, f.id, ErrorCode.BadRequest, "from is not accepted with durable: a durable resumes where its consumer is");
  const sub = ctx.subs.begin(ws, f.channel);
  if (grant.token) setSubExpiry(ctx, ws, sub, "token", grant.token.exp);
  const durable = new DurableSub(
    fanoutSocket(ws),
    { user: s.user, durable: f.durable, pattern: f.channel, maxInflight: f.maxInflight ?? ctx.config.durable.maxInflight },
    ctx.metrics,
  );
  sub.durable = durable;
  try {
    await durable.start(durables);
  } catch (e) {
    ctx.subs.end(ws, sub); // stops the durable too
    return replyFailure(ctx, ws, f.id, brokerFailure(e, ctx.broker.isConnected(), "durable subscribe"));
  }
  if (s.closed || sub.life.phase === "ended") return void durable.stop().catch(() => undefined);
  ctx.subs.attachDurable(ws, sub);
  sendFrame(ws, { op: "ok", id: f.id, fields: { durable: f.durable, ...granted(ctx, ws, sub, grant.hook) } });
}

function unsubscribe(ctx: HandlerContext, ws: Socket, f: UnsubFrame): void {
  const s = ws.getUserData();
  const sub = s.subs.get(f.channel);
  if (!sub) return replyErr(ctx, ws, f.id, ErrorCode.NotSubscribed, `not subscribed to ${f.channel}`);
  ctx.subs.end(ws, sub);
  sendFrame(ws, { op: "ok", id: f.id });
}

function settle(ctx: HandlerContext, ws: Socket, f: AckFrame): void {
  const s = ws.getUserData();
  const candidates = f.sub !== undefined ? [s.subs.get(f.sub)] : [...s.subs.values()];
  for (const sub of candidates) {
    if (sub?.durable?.settle(f.op, f.seq, f.delay)) {
      if (f.id !== undefined) sendFrame(ws, { op: "ok", id: f.id });
      return;
    }
  }
  replyErr(ctx, ws, f.id, ErrorCode.UnknownSeq, `no unacknowledged message with seq ${f.seq} on this connection`);
}

/** Releases everything a closed socket held. */
export function releaseSession(ctx: HandlerContext, ws: Socket): void {
  const s = ws.getUserData();
  s.flow?.stop();
  for (const sub of [...s.subs.values()]) ctx.subs.end(ws, sub);
  s.subs.clear();
}

async function publish(ctx: HandlerContext, ws: Socket, f: PubFrame | PubBatchFrame): Promise<void> {
  if ("batch" in f) return publishBatch(ctx, ws, f);
  if (!(await authorized(ctx, ws, f.id, { right: "pub", channel: f.channel, ttl: f.ttl }))) return;
  try {
    const r = await ctx.publisher.publish("ws", publisherIs(ws), f.channel, f.data, f.msgId, undefined, f.ttl, f.type);
    sendFrame(ws, { op: "ok", id: f.id, fields: { seq: r.seq, duplicate: r.duplicate } });
  } catch (e) {
    if (e instanceof GatewayError) return replyFailure(ctx, ws, f.id, e);
    throw e;
  }
}

/**
 * The publisher as the publish hook is told: the socket's identity now, and its client id; stored with the
 * message as Centrifuge's ClientInfo (user, client, the connection's info, the subscription's on that channel).
 */
const publisherIs = (ws: Socket): PublishedBy => {
  const s = ws.getUserData();
  const client = clientIdOf(ws);
  const by = publishedBy(s.identity, client);
  const user = s.identity.identified ? s.identity.principal.user : null;
  return { ...by, publisherOn: (channel) => publisherInfo(user, client, connectionInfo(s.identity), s.subs.get(channel)?.info) };
};

/** A `pub` with `batch`: each item through the authorization chain, all published pipelined, one `ok` with every result. */
async function publishBatch(ctx: HandlerContext, ws: Socket, f: PubBatchFrame): Promise<void> {
  const s = ws.getUserData();
  const max = ctx.config.server.publishBatchMaxItems;
  if (f.batch.length > max) return replyErr(ctx, ws, f.id, ErrorCode.BadRequest, `a batch holds at most ${max} items (this one has ${f.batch.length})`);
  // Each item counts against FRAME_RATE as a frame would: the frame itself was counted on arrival.
  s.frameLimit?.charge(Date.now(), f.batch.length - 1);
  const results = await ctx.publisher.publishBatch("ws", publisherIs(ws), f.batch, (it) =>
    ctx.guard.access.authorize(() => s.identity, { right: "pub", channel: it.channel, ttl: it.ttl }),
  );
  sendFrame(ws, { op: "ok", id: f.id, fields: { results } });
}
