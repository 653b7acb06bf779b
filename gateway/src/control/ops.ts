import { hasInfinite, HUGE_NUMBER } from "../protocol/json-numbers.js";
import { checkChannel, checkPattern } from "../protocol/channel.js";
import { PRESENCE_INFO_BYTES } from "../protocol/frames.js";
import type { ServerSubscribeRequest } from "../ws/server-subscribe.js";

/**
 * The control plane's operations, as requests (HTTP bodies and query strings, NATS request bodies) and as
 * each worker's part of the answer. Pure: parsing, and merging the workers' parts into one answer.
 */
export const CONTROL_OPS = ["disconnect", "unsubscribe", "subscribe", "occupancy", "broadcast", "user", "events/replay"] as const;
export type ControlOp = (typeof CONTROL_OPS)[number];
export const isControlOp = (s: string): s is ControlOp => (CONTROL_OPS as readonly string[]).includes(s);

/** Every worker does these on its own connections: the door gathers their parts. */
export type WorkerRequest =
  | { op: "disconnect"; user: string; reconnect: boolean; reason: string }
  | { op: "unsubscribe"; user: string; channel: string; reason: string }
  | SubscribeRequest
  | { op: "occupancy"; channel: string }
  | { op: "occupancy"; pattern: string }
  | { op: "user"; user: string };

/**
 * A subscription added to every live WebSocket of `user` (or its one connection `client`), on every worker of
 * every instance (ws/server-subscribe.ts): `from` recovers from a stream position, `info` is what the channel
 * sees of it.
 */
export type SubscribeRequest = { op: "subscribe"; user: string; channel: string; client?: string } & Omit<ServerSubscribeRequest, "channel">;

/** One door does this alone (it publishes). */
export type BroadcastRequest = { op: "broadcast"; channels: string[]; data: unknown };

/** One door does this alone too: the events webhook sent again from an id or a time. */
export type ReplayRequest = { op: "events/replay" } & ({ fromId: number } | { fromTime: string });

export type ControlRequest = WorkerRequest | BroadcastRequest | ReplayRequest;

/** Who answered: a worker of an instance, and how many workers that instance runs. */
export type Answerer = { instance: string; worker: number; workers: number };

export type ConnectionPart = {
  transport: "websocket" | "sse";
  id: number;
  ip: string;
  subscriptions: { channel: string; state: string; durable?: boolean; auto?: boolean }[];
};

/** One worker's part of an answer. */
export type WorkerPart =
  | { op: "disconnect"; websocket: number; sse: number }
  | { op: "unsubscribe"; websocket: number; sse: number }
  /** Connections subscribed, and refused (with the first refusal: the namespace, a limit). */
  | { op: "subscribe"; websocket: number; refused: number; refusal?: Refusal }
  | { op: "occupancy"; subscribers: number; patterns: Record<string, number>; truncated: boolean }
  | { op: "user"; connections: ConnectionPart[]; truncated: boolean };

export type WorkerReply = Answerer & { part: WorkerPart };

/** Why a connection was not subscribed: a wire error code and its message. */
export type Refusal = { code: string; message: string };

/** How many patterns an occupancy answer lists at most (per worker, and in the merged answer). */
export const OCCUPANCY_MAX_PATTERNS = 10_000;
/** How many connections of one user a worker lists at most. */
export const USER_MAX_CONNECTIONS = 1_000;
/** About the most JSON a worker's listing part holds: it travels as one NATS message (1 MB by default). */
export const PART_MAX_BYTES = 512 * 1024;
const MAX_REASON = 256;
const MAX_USER = 256;
/** What a subscription's `info` may be, as JSON: presence's bound (protocol/frames.ts). */
const MAX_INFO = PRESENCE_INFO_BYTES;

type Parsed<T> = T | { error: string };
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

function userOf(o: Record<string, unknown>): Parsed<string> {
  const u = o.user;
  if (typeof u !== "string" || u.length === 0 || u.length > MAX_USER) return { error: `user must be a string of 1-${MAX_USER} characters` };
  return u;
}

function reasonOf(o: Record<string, unknown>, fallback: string): Parsed<string> {
  if (o.reason === undefined) return fallback;
  if (typeof o.reason !== "string" || o.reason.length > MAX_REASON) return { error: `reason must be a string of at most ${MAX_REASON} characters` };
  return o.reason;
}

/** Reads and checks one request of `op` (a parsed JSON body, or the query as an object). */
export function parseControlRequest(op: ControlOp, v: unknown, maxChannels: number): Parsed<ControlRequest> {
  if (!isObject(v)) return { error: "the body must be a JSON object" };
  switch (op) {
    case "events/replay":
      return replayOf(v);
    case "disconnect": {
      const user = userOf(v);
      if (typeof user !== "string") return user;
      if (typeof v.reconnect !== "boolean") return { error: "reconnect must be true or false" };
      const reason = reasonOf(v, v.reconnect ? "disconnected by the server: reconnect" : "disconnected by the server");
      if (typeof reason !== "string") return reason;
      return { op, user, reconnect: v.reconnect, reason };
    }
    case "unsubscribe": {
      const user = userOf(v);
      if (typeof user !== "string") return user;
      const c = checkPattern(v.channel);
      if (!c.ok) return { error: `channel: ${c.reason}` };
      const reason = reasonOf(v, "unsubscribed by the server");
      if (typeof reason !== "string") return reason;
      return { op, user, channel: v.channel as string, reason };
    }
    case "subscribe":
      return subscribeOf(v);
    case "occupancy": {
      if ((v.channel === undefined) === (v.pattern === undefined)) return { error: "give one of channel or pattern" };
      if (v.channel !== undefined) {
        const c = checkChannel(v.channel);
        return c.ok ? { op, channel: v.channel as string } : { error: `channel: ${c.reason}` };
      }
      const c = checkPattern(v.pattern);
      return c.ok ? { op, pattern: v.pattern as string } : { error: `pattern: ${c.reason}` };
    }
    case "broadcast": {
      const chs = v.channels;
      if (!Array.isArray(chs) || chs.length === 0) return { error: "channels must be a non-empty list of channels" };
      if (chs.length > maxChannels) return { error: `a broadcast names at most ${maxChannels} channels (this one ${chs.length})` };
      for (const ch of chs) {
        const c = checkChannel(ch);
        if (!c.ok) return { error: `channel ${JSON.stringify(ch)}: ${c.reason}` };
      }
      if (new Set(chs).size !== chs.length) return { error: "channels must not repeat a channel" };
      if (v.data === undefined) return { error: "data is required" };
      if (hasInfinite(v.data)) return { error: HUGE_NUMBER };
      return { op, channels: chs as string[], data: v.data };
    }
    case "user": {
      const user = userOf(v);
      return typeof user === "string" ? { op, user } : user;
    }
  }
}

/** `{"user","channel","client"?,"from"?:{"seq","epoch"},"info"?}`: one channel (no wildcard), its start, its info. */
function subscribeOf(v: Record<string, unknown>): Parsed<SubscribeRequest> {
  const user = userOf(v);
  if (typeof user !== "string") return user;
  const c = checkChannel(v.channel);
  if (!c.ok) return { error: `channel: ${c.reason}` };
  const out: SubscribeRequest = { op: "subscribe", user, channel: v.channel as string };
  if (v.client !== undefined) {
    if (typeof v.client !== "string" || v.client.length === 0 || v.client.length > MAX_USER)
      return { error: `client must be a string of 1-${MAX_USER} characters` };
    out.client = v.client;
  }
  if (v.from !== undefined) {
    const f = v.from;
    if (!isObject(f) || !Number.isSafeInteger(f.seq) || (f.seq as number) < 1 || typeof f.epoch !== "string" || f.epoch.length > 64)
      return { error: "from must be {seq: the first seq wanted (>= 1), epoch: the stream's epoch}" };
    out.from = { seq: f.seq as number, epoch: f.epoch };
  }
  if (v.info !== undefined && v.info !== null) {
    if (Buffer.byteLength(JSON.stringify(v.info)) > MAX_INFO) return { error: `info must encode to at most ${MAX_INFO} bytes of JSON` };
    out.info = v.info;
  }
  return out;
}

/** What a gathering tells besides the parts: who answered, and whether every worker of every instance did. */
export type Coverage = { instances: number; workers: number; complete: boolean };

/** The merged answer of a worker operation (the HTTP body and the NATS reply). */
export function mergeParts(req: WorkerRequest, replies: readonly WorkerReply[], coverage: Coverage): Record<string, unknown> {
  const meta = { instances: coverage.instances, workers: coverage.workers, complete: coverage.complete };
  switch (req.op) {
    case "disconnect":
    case "unsubscribe": {
      let websocket = 0;
      let sse = 0;
      for (const r of replies)
        if (r.part.op === req.op) {
          websocket += r.part.websocket;
          sse += r.part.sse;
        }
      const key = req.op === "disconnect" ? "closed" : "ended";
      return { user: req.user, [key]: websocket + sse, websocket, sse, ...meta };
    }
    case "subscribe": {
      let websocket = 0;
      let refused = 0;
      let refusal: Refusal | undefined;
      for (const r of replies)
        if (r.part.op === "subscribe") {
          websocket += r.part.websocket;
          refused += r.part.refused;
          refusal ??= r.part.refusal;
        }
      return { user: req.user, channel: req.channel, subscribed: websocket, refused, ...(refusal ? { refusal } : {}), ...meta };
    }
    case "occupancy": {
      let subscribers = 0;
      let truncated = false;
      const patterns: Record<string, number> = {};
      let listed = 0;
      for (const r of replies) {
        if (r.part.op !== "occupancy") continue;
        subscribers += r.part.subscribers;
        truncated ||= r.part.truncated;
        for (const [p, n] of Object.entries(r.part.patterns)) {
          if (patterns[p] === undefined) {
            if (listed >= OCCUPANCY_MAX_PATTERNS) {
              truncated = true;
              continue;
            }
            listed++;
            patterns[p] = 0;
          }
          patterns[p] += n;
        }
      }
      const what = "channel" in req ? { channel: req.channel } : { pattern: req.pattern };
      return { ...what, subscribers, patterns, ...(truncated ? { truncated } : {}), ...meta };
    }
    case "user": {
      const connections: (ConnectionPart & { instance: string; worker: number })[] = [];
      let truncated = false;
      for (const r of replies) {
        if (r.part.op !== "user") continue;
        truncated ||= r.part.truncated;
        for (const c of r.part.connections) connections.push({ instance: r.instance, worker: r.worker, ...c });
      }
      return { user: req.user, connections, ...(truncated ? { truncated } : {}), ...meta };
    }
  }
}

/** `{"fromId":N}` (a positive integer) or `{"fromTime":"<ISO 8601>"}`, not both. */
function replayOf(v: Record<string, unknown>): Parsed<ReplayRequest> {
  if ((v.fromId === undefined) === (v.fromTime === undefined)) return { error: "give one of fromId or fromTime" };
  if (v.fromId !== undefined)
    return Number.isSafeInteger(v.fromId) && (v.fromId as number) > 0
      ? { op: "events/replay", fromId: v.fromId as number }
      : { error: "fromId must be a positive integer" };
  const t = typeof v.fromTime === "string" ? Date.parse(v.fromTime) : NaN;
  return Number.isNaN(t) ? { error: "fromTime must be a date and time (ISO 8601)" } : { op: "events/replay", fromTime: new Date(t).toISOString() };
}
