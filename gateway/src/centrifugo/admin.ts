import { hostname } from "node:os";
import { isWildcard } from "../protocol/channel.js";
import type { ControlOp } from "../control/ops.js";
import { ApiCode, apiErrorOf, badRequest, fail, type Reply } from "./codes.js";
import { refusedAccess, type Caller, type ServerApiDeps } from "./context.js";
import { toCentrifugoChannel } from "../protocol/centrifugo-channels.js";
import { channelsParams, disconnectParams, globMatcher, refreshParams, subscribeParams, unsubscribeParams } from "./request.js";

/**
 * The methods that act on connections or read the cluster: the control plane's operations (`/v1/server/…`),
 * with its right (an API key with the `admin` scope; with authentication off, a request from this host).
 */

const refusedAdmin = (d: ServerApiDeps, who: Caller) => refusedAccess(d.access, who, { right: "admin", local: who.local });

/** One control operation across every worker of every instance; its body, or the error to answer. */
async function control(
  d: ServerApiDeps,
  who: Caller,
  op: ControlOp,
  input: Record<string, unknown>,
): Promise<{ body: Record<string, unknown> } | { error: ReturnType<typeof apiErrorOf> }> {
  const a = await d.control.call(op, input, who.identity);
  const code = a.body.error;
  if (typeof code === "string") return { error: apiErrorOf({ code, message: String(a.body.message ?? code) }) };
  return { body: a.body };
}

/** `disconnect`: every connection of the user (WebSocket and SSE), on every instance (`POST /v1/server/disconnect`). */
export async function disconnect(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const p = disconnectParams(o);
  if ("error" in p) return badRequest(p.error);
  const refused = await refusedAdmin(d, who);
  if (refused) return refused;
  const r = await control(d, who, "disconnect", { user: p.user, reconnect: p.reconnect, reason: p.reason });
  return "error" in r ? r : { result: {} };
}

/** `unsubscribe`: the user's subscriptions within the channel, everywhere (`POST /v1/server/unsubscribe`). */
export async function unsubscribe(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const p = unsubscribeParams(o);
  if ("error" in p) return badRequest(p.error);
  const refused = await refusedAdmin(d, who);
  if (refused) return refused;
  const r = await control(d, who, "unsubscribe", { user: p.user, channel: p.channel, reason: "unsubscribed by the server" });
  return "error" in r ? r : { result: {} };
}

/**
 * `subscribe`: a server-side subscription on every live connection of the user (or its one `client`), on every
 * worker of every instance (the control plane's `subscribe`, ws/server-subscribe.ts), recovered after
 * `recover_since` when the stream still holds that position. Connections that are not there are not an error
 * (as Centrifugo answers); when every connection found refused it (a namespace switch, a limit), that refusal is.
 */
export async function subscribe(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const p = subscribeParams(o);
  if ("error" in p) return badRequest(p.error);
  const refused = await refusedAdmin(d, who);
  if (refused) return refused;
  const input = {
    user: p.user,
    channel: p.channel,
    ...(p.client !== undefined ? { client: p.client } : {}),
    ...(p.since ? { from: { seq: p.since.offset + 1, epoch: p.since.epoch } } : {}),
    ...(p.info !== undefined ? { info: p.info } : {}),
  };
  const r = await control(d, who, "subscribe", input);
  if ("error" in r) return r;
  const refusal = r.body.refusal as { code: string; message: string } | undefined;
  if (refusal && r.body.subscribed === 0) return { error: apiErrorOf(refusal) };
  return { result: {} };
}

/**
 * `refresh`: `expired: true` ends the user's connections asking them to reconnect (with a new token), as
 * Centrifugo closes an expired connection; extending a connection's expiry (`expire_at`) is not available:
 * connections here refresh their own token (the `refresh` op).
 */
export async function refresh(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const p = refreshParams(o);
  if ("error" in p) return badRequest(p.error);
  const refused = await refusedAdmin(d, who);
  if (refused) return refused;
  if (!p.expired)
    return fail(ApiCode.NotAvailable, "refresh without expired is not available: a connection's expiry is its token's, which the connection refreshes itself");
  const r = await control(d, who, "disconnect", { user: p.user, reconnect: true, reason: "connection expired: reconnect with a new token" });
  return "error" in r ? r : { result: {} };
}

/**
 * `channels`: the channels with subscribers now, with how many (`GET /v1/server/occupancy?pattern=>`),
 * filtered by the glob `pattern`. Only subscriptions of one channel count: wildcard subscriptions
 * (`orders.>`) name no channel. Channels without a Centrifugo name (see protocol/centrifugo-channels.ts) are left out.
 */
export async function channels(d: ServerApiDeps, who: Caller, o: Record<string, unknown>): Promise<Reply> {
  const p = channelsParams(o);
  if ("error" in p) return badRequest(p.error);
  const match = globMatcher(p.pattern);
  if (typeof match !== "function") return badRequest(match.error);
  const refused = await refusedAdmin(d, who);
  if (refused) return refused;
  const r = await control(d, who, "occupancy", { pattern: ">" });
  if ("error" in r) return r;
  const out: Record<string, { num_clients: number }> = {};
  const patterns = (r.body.patterns ?? {}) as Record<string, number>;
  for (const [pattern, n] of Object.entries(patterns)) {
    if (isWildcard(pattern)) continue;
    const name = toCentrifugoChannel(pattern);
    if (name.ok && match(name.name)) out[name.name] = { num_clients: n };
  }
  return { result: { channels: out } };
}

type InstanceStats = { workers?: number; connections?: number; sseStreams?: number; subscriptions?: number; channels?: number };

/**
 * `info`: this instance as one node, from its `/v1/stats` (connections with SSE streams, subscriptions, live
 * channels). Other instances are not listed: the control plane's occupancy and users cover the cluster.
 */
export async function info(d: ServerApiDeps, who: Caller): Promise<Reply> {
  const refused = await refusedAdmin(d, who);
  if (refused) return refused;
  let s: InstanceStats;
  try {
    s = JSON.parse(await d.instanceStats()) as InstanceStats;
  } catch (e) {
    d.log.warn({ err: e }, "server api info: no stats from the primary");
    return fail(ApiCode.Internal, "the instance's stats are not available now; retry");
  }
  const node = {
    uid: d.instance,
    name: hostname(),
    version: d.version,
    num_clients: (s.connections ?? 0) + (s.sseStreams ?? 0),
    num_users: 0,
    num_subs: s.subscriptions ?? 0,
    num_channels: s.channels ?? 0,
    uptime: Math.floor(process.uptime()),
  };
  return { result: { nodes: [node] } };
}
