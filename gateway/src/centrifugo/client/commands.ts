/**
 * The commands of the Centrifuge client protocol (v2, JSON), read from the values a frame's lines decoded to
 * (protocol/centrifuge/json.ts). Pure: what each command means is dispatch.ts's. A command is an object with
 * an `id` (a positive integer; a reply carries it back) and one method field; the empty command (`{}`, no id)
 * is the client's pong.
 */

export type SubscribeCommand = {
  method: "subscribe";
  id: number;
  channel: string;
  /** Recover the publications after `offset` of stream `epoch` (the client's position). */
  recover: boolean;
  offset: number;
  epoch: string;
  /** The client asks for a stream position (positioned) or for recovery on its next subscribe (recoverable). */
  positioned: boolean;
  recoverable: boolean;
  /** It wants join and leave pushes of the channel. */
  joinLeave: boolean;
  /** A subscription token for the channel (AUTH.md "Subscription tokens"). */
  token?: string;
  /** It asks for Fossil deltas (`delta: "fossil"`). */
  delta: boolean;
};

/** Where a client was in a channel: the recovery it asks for (its server-side subscriptions' at `connect`). */
export type Position = { recover: boolean; offset: number; epoch: string };

/** The most server-side subscriptions a `connect` may name (as many as a token may grant: auth/permissions.ts). */
const MAX_CONNECT_SUBS = 100;

export type Command =
  | { method: "pong" }
  | { method: "connect"; id: number; token: string | undefined; data: unknown; subs: Readonly<Record<string, Position>> }
  | SubscribeCommand
  | { method: "unsubscribe"; id: number; channel: string }
  | { method: "publish"; id: number; channel: string; data: unknown }
  | { method: "rpc"; id: number; rpcMethod: string; data: unknown }
  | { method: "refresh"; id: number; token: string }
  /** history, presence, presence_stats: their params as the server API reads them (centrifugo/reads.ts). */
  | { method: "history" | "presence" | "presence_stats"; id: number; params: Record<string, unknown> }
  | { method: "send"; data: unknown }
  | { method: "sub_refresh"; id: number; channel: string; token: string };

/** A command that cannot be read: answered with its id when it has one, else the connection is closed. */
export type BadCommand = { bad: string; id?: number };

const METHODS = ["connect", "subscribe", "unsubscribe", "publish", "presence", "presence_stats", "history", "rpc", "send", "refresh", "sub_refresh"] as const;
const MAX_ID = 0xffff_ffff;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** One decoded command value as a command, or why it is none. */
export function readCommand(raw: unknown): Command | BadCommand {
  if (!isObject(raw)) return { bad: "a command must be a JSON object" };
  let id: number | undefined;
  if (raw.id !== undefined && raw.id !== 0) {
    if (!Number.isInteger(raw.id) || (raw.id as number) < 1 || (raw.id as number) > MAX_ID) return { bad: "id must be an integer from 1 to 4294967295" };
    id = raw.id as number;
  }
  const present = METHODS.filter((m) => raw[m] !== undefined && raw[m] !== null);
  if (present.length === 0) return id === undefined ? { method: "pong" } : { bad: "the command names no method", id };
  if (present.length > 1) return withId(`the command names ${present.length} methods (${present.join(", ")}): one per command`, id);
  const method = present[0] as (typeof METHODS)[number];
  const body = raw[method];
  if (!isObject(body)) return withId(`${method} must be an object`, id);
  if (method === "send") return { method, data: body.data ?? null };
  if (id === undefined) return { bad: `${method} needs an id: its reply carries it` };
  return readBody(method, id, body);
}

const withId = (bad: string, id: number | undefined): BadCommand => (id === undefined ? { bad } : { bad, id });

function readBody(method: Exclude<(typeof METHODS)[number], "send">, id: number, b: Record<string, unknown>): Command | BadCommand {
  switch (method) {
    case "connect":
      if (b.token !== undefined && typeof b.token !== "string") return { bad: "connect.token must be a string", id };
      return readConnect(id, b);
    case "subscribe":
      return readSubscribe(id, b);
    case "unsubscribe": {
      const channel = channelOf(b, method);
      return typeof channel === "string" ? { method, id, channel } : { ...channel, id };
    }
    case "publish": {
      const channel = channelOf(b, method);
      if (typeof channel !== "string") return { ...channel, id };
      if (b.data === undefined) return { bad: "publish.data is missing", id };
      return { method, id, channel, data: b.data };
    }
    case "rpc":
      if (typeof b.method !== "string" || b.method.length === 0) return { bad: "rpc.method must be a non-empty string", id };
      return { method, id, rpcMethod: b.method, data: b.data ?? null };
    case "refresh":
      if (typeof b.token !== "string" || b.token.length === 0) return { bad: "refresh.token must be a non-empty string", id };
      return { method, id, token: b.token };
    case "history":
    case "presence":
    case "presence_stats":
      return { method, id, params: b };
    case "sub_refresh": {
      const channel = channelOf(b, method);
      if (typeof channel !== "string") return { ...channel, id };
      if (typeof b.token !== "string" || b.token.length === 0) return { bad: "sub_refresh.token must be a non-empty string", id };
      return { method, id, channel, token: b.token };
    }
  }
}

function readConnect(id: number, b: Record<string, unknown>): Command | BadCommand {
  if (b.token !== undefined && typeof b.token !== "string") return { bad: "connect.token must be a string", id };
  const subs: Record<string, Position> = {};
  if (b.subs !== undefined && b.subs !== null) {
    if (!isObject(b.subs) || Object.keys(b.subs).length > MAX_CONNECT_SUBS)
      return { bad: `connect.subs must be an object of at most ${MAX_CONNECT_SUBS} channels`, id };
    for (const [name, v] of Object.entries(b.subs)) {
      const p = isObject(v) ? readPosition(v, "connect.subs") : "connect.subs values must be objects";
      if (typeof p === "string") return { bad: p, id };
      subs[name] = p;
    }
  }
  return { method: "connect", id, token: b.token === "" ? undefined : (b.token as string | undefined), data: b.data, subs };
}

/** `recover`, `offset` and `epoch` of a subscribe (or of a server-side subscription at connect), or what is wrong. */
function readPosition(b: Record<string, unknown>, what: string): Position | string {
  const offset = b.offset ?? 0;
  if (!Number.isSafeInteger(offset) || (offset as number) < 0) return `${what}.offset must be an integer >= 0`;
  const epoch = b.epoch ?? "";
  if (typeof epoch !== "string" || epoch.length > 64) return `${what}.epoch must be a string of at most 64 characters`;
  return { recover: flag(b.recover), offset: offset as number, epoch };
}

function channelOf(b: Record<string, unknown>, method: string): string | BadCommand {
  return typeof b.channel === "string" && b.channel.length > 0 ? b.channel : { bad: `${method}.channel must be a non-empty string` };
}

const flag = (v: unknown): boolean => v === true;

function readSubscribe(id: number, b: Record<string, unknown>): Command | BadCommand {
  const channel = channelOf(b, "subscribe");
  if (typeof channel !== "string") return { ...channel, id };
  const position = readPosition(b, "subscribe");
  if (typeof position === "string") return { bad: position, id };
  if (b.token !== undefined && typeof b.token !== "string") return { bad: "subscribe.token must be a string", id };
  const delta = b.delta ?? "";
  if (delta !== "" && delta !== "fossil") return { bad: 'subscribe.delta must be "fossil"', id };
  return {
    method: "subscribe",
    id,
    channel,
    ...position,
    positioned: flag(b.positioned),
    recoverable: flag(b.recoverable),
    joinLeave: flag(b.join_leave),
    ...(typeof b.token === "string" && b.token !== "" ? { token: b.token } : {}),
    delta: delta === "fossil",
  };
}
