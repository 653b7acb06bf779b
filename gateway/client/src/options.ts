import { GatewayError } from "./errors.js";
import type { MessageHandler, WebSocketConstructor } from "./types.js";
import { JSON_WIRE, msgpackWire, type MsgpackFunctions, type Wire } from "./wire.js";

export interface GatewayClientOptions {
  /** Sent as a `bearer.<token>` subprotocol (or as the `token` query parameter with `tokenVia: "query"`). */
  token?: string;
  /** Called before every connect for a fresh token; also makes the client reconnect after a 4001 close. */
  getToken?: () => string | Promise<string>;
  /**
   * A subscription token for `channel` (a JWT from the app's backend naming that channel; AUTH.md
   * "Subscription tokens"), or nothing to subscribe with the connection's own rights. Called at each
   * `subscribe()`, at every resubscribe after a reconnect, and before the token's `exp` to refresh it
   * (`sub_refresh`); a subscription whose token expired unrefreshed subscribes again with a new one.
   */
  getSubscriptionToken?: (channel: string) => string | undefined | Promise<string | undefined>;
  /**
   * "protocol" (default): `Sec-WebSocket-Protocol: fanout.v1, bearer.<token>`, which proxies and access logs do
   * not keep; "query": `?token=`, in the URL, where they do (only for servers behind something that drops the
   * subprotocol header).
   */
  tokenVia?: "query" | "protocol";
  /** WebSocket implementation; defaults to `globalThis.WebSocket`. */
  WebSocket?: WebSocketConstructor;
  /** Reconnect delay bounds: delay = random(0, min(maxDelayMs, minDelayMs·2^attempt)). */
  minDelayMs?: number;
  maxDelayMs?: number;
  /** Most publishes held while disconnected; more reject with `queue_full`. */
  queueLimit?: number;
  /** A connection attempt that has not opened after this long is abandoned and retried. */
  connectTimeoutMs?: number;
  /**
   * While connected, a `ping` frame goes out this often (0: never), and a connection that receives nothing
   * within `pingTimeoutMs` of one is dropped and reconnected: a dead link is noticed within their sum.
   */
  pingIntervalMs?: number;
  /** How long after a ping a silent connection counts as dead; at most `pingIntervalMs`. */
  pingTimeoutMs?: number;
  /**
   * Handler of server-side subscriptions (the token's `channels.auto`, or a connect hook's): messages of the
   * channels the server subscribed this connection to. They resume after reconnects like `subscribe()`'s;
   * without this option their messages are dropped.
   */
  onAutoMessage?: MessageHandler;
  /**
   * Speak `fanout.v1.msgpack` (binary MessagePack frames) instead of JSON text: pass a MessagePack library's
   * `encode` and `decode`, e.g. `import { encode, decode } from "@msgpack/msgpack"` → `msgpack: { encode, decode }`.
   * Messages arrive as with JSON (`data` parsed); payloads that are not JSON come as `enc: "text"` strings or
   * `enc: "binary"` bytes.
   */
  msgpack?: MsgpackFunctions;
}

export const DEFAULT_OPTIONS = {
  minDelayMs: 250,
  maxDelayMs: 15_000,
  queueLimit: 1_000,
  connectTimeoutMs: 10_000,
  pingIntervalMs: 20_000,
  pingTimeoutMs: 10_000,
  tokenVia: "protocol",
} as const;

/** The options in force: defaults filled in, each checked. `token` changes with `refreshToken`. */
export type ClientOptions = Required<Omit<GatewayClientOptions, "token" | "getToken" | "getSubscriptionToken" | "onAutoMessage" | "msgpack">> &
  Pick<GatewayClientOptions, "token" | "getToken" | "getSubscriptionToken" | "onAutoMessage"> & {
    /** How frames are written and read: JSON, or MessagePack with the `msgpack` option. */
    wire: Wire;
  };

/** Fills in the defaults and checks every option; a bad one throws `bad_option` (no WebSocket: `no_websocket`). */
export function parseOptions(options: GatewayClientOptions): ClientOptions {
  const WS = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (!WS) throw new GatewayError("no_websocket", "no WebSocket implementation: pass options.WebSocket (e.g. the ws package) in Node < 22");
  const { msgpack, ...rest } = options;
  if (msgpack !== undefined && (typeof msgpack.encode !== "function" || typeof msgpack.decode !== "function"))
    throw new GatewayError("bad_option", "msgpack needs encode and decode");
  const wire = msgpack ? msgpackWire(msgpack) : JSON_WIRE;
  const opts: ClientOptions = { ...DEFAULT_OPTIONS, ...stripUndefined(rest), WebSocket: WS, wire };
  const { minDelayMs: min, maxDelayMs: max, queueLimit, connectTimeoutMs } = opts;
  if (!(Number.isFinite(min) && min >= 0)) throw new GatewayError("bad_option", `minDelayMs must be a number >= 0, got ${min}`);
  if (!(Number.isFinite(max) && max >= min)) throw new GatewayError("bad_option", `maxDelayMs must be a number >= minDelayMs (${min}), got ${max}`);
  if (!(Number.isInteger(queueLimit) && queueLimit >= 0)) throw new GatewayError("bad_option", `queueLimit must be an integer >= 0, got ${queueLimit}`);
  if (!(Number.isFinite(connectTimeoutMs) && connectTimeoutMs > 0))
    throw new GatewayError("bad_option", `connectTimeoutMs must be > 0, got ${connectTimeoutMs}`);
  const { pingIntervalMs: every, pingTimeoutMs: within } = opts;
  if (!(Number.isFinite(every) && every >= 0)) throw new GatewayError("bad_option", `pingIntervalMs must be a number >= 0, got ${every}`);
  if (every > 0 && !(Number.isFinite(within) && within > 0 && within <= every))
    throw new GatewayError("bad_option", `pingTimeoutMs must be > 0 and <= pingIntervalMs (${every}), got ${within}`);
  if (opts.tokenVia !== "query" && opts.tokenVia !== "protocol") throw new GatewayError("bad_option", `tokenVia must be "query" or "protocol"`);
  return opts;
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
