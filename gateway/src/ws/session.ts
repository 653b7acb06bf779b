import type { WebSocket } from "../uws.js";
import { sendActivity } from "../fanout/send-activity.js";
import type { DurableSub } from "../fanout/durable-sub.js";
import type { Flow, SubLifecycle } from "../fanout/lifecycle.js";
import type { FanoutSocket } from "../fanout/socket.js";
import type { Identity } from "../auth/access.js";
import type { FrameLimiter } from "../limits/frame-rate.js";
import type { Metrics } from "../metrics/metrics.js";
import type { ErrorCode } from "../protocol/codes.js";
import type { Id } from "../protocol/frames.js";
import type { SubExpiry } from "./sub-expiry-rule.js";
import type { Codec } from "../protocol/codec.js";
import { socketTopic } from "../fanout/topics.js";
import { JSON_CODEC } from "../protocol/codecs.js";
import type { ServerFrame } from "../protocol/server-frames.js";
import { WIRE_ERRORS } from "../errors.js";
import { randomBytes } from "node:crypto";

/** One subscription of one socket. */
export type SubState = {
  readonly pattern: string;
  readonly topic: string;
  /** Its phase and every transition (fanout/lifecycle.ts). */
  readonly life: SubLifecycle;
  /** The socket as the fan-out core sees it (late repairs are sent to it). */
  readonly socket: FanoutSocket;
  /** Holds a reference on the hub's feed of the pattern (released once, when it ends). */
  feedHeld: boolean;
  /** Counted in `fanout_subscriptions`. */
  counted: boolean;
  durable?: DurableSub;
  /** A server-side subscription (`channels.auto`) the client has not taken over with its own `sub` yet. */
  auto?: boolean;
  /** Added by the server to the live connection (ws/server-subscribe.ts): it stands on the server's grant, not on the token's claims. */
  byServer?: boolean;
  /**
   * Since it last joined live: every stored message up to here was written to it (by its catch-up) or is
   * older than its start. A message the feed repairs late reaches it only when above (fanout/groups.ts).
   */
  covered: number;
  /** Runs once when the subscription ends (leaving the channel's presence). */
  onEnd?: () => void;
  /**
   * Its one end, set by the subscription token that granted it or by the subscribe hook, and the one timer
   * acting on it (ws/sub-expiry.ts owns both); cleared when it ends. None: it runs until unsubscribed.
   */
  expiry?: SubExpiry;
  /** The subscription token's `info` claim: Centrifuge's `chan_info` of what this connection publishes here. */
  info?: unknown;
};

/** Per-socket state (uWS user data). */
export type Session = {
  readonly id: number;
  readonly ip: string;
  /** The user (JWT `sub`, or the connect hook's user); "anon" when nothing names it. Durable names are scoped by it. */
  readonly user: string;
  /**
   * Who the connection is, as the authorization chain (auth/access.ts) established it at the upgrade: the
   * claims (channel permissions, expiry), what the connect hook granted and its `info`. Replaced by `refresh`.
   */
  identity: Identity;
  /** The encoding of its frames, chosen by the negotiated subprotocol (protocol/codecs.ts). */
  readonly codec: Codec;
  /** Closes the socket with 4001 at token expiry; re-armed by `refresh`. */
  expiryTimer?: NodeJS.Timeout;
  /** Inbound frame allowance (FRAME_RATE); undefined when unlimited. */
  frameLimit?: FrameLimiter;
  readonly subs: Map<string, SubState>;
  closed: boolean;
  /**
   * Live or paused (its send buffer crossed the backpressure threshold), for all its subscriptions at once;
   * made with its first subscription (ws/subscriptions.ts).
   */
  flow?: Flow;
  /** Catch-ups waiting for the socket's buffer to drain. */
  drainWaiters: (() => void)[];
  /** Message frames are sent with compress=true (COMPRESSION on; uWS deflates only if the client negotiated it). */
  compress?: boolean;
  /** `rpc` calls sent to the backend and not answered yet (at most RPC_MAX_IN_FLIGHT). */
  rpcInFlight: number;
  /** The connection's presence client id (made at its first presence:true subscription). */
  clientId?: string;
  /** It reads coalesced frames (the `coalesce=1` query parameter of its upgrade; PROTOCOL.md "Coalesced frames"). */
  coalesce: boolean;
  /** The socket as the fan-out core sees it (set when it opens). */
  port?: FanoutSocket;
  /**
   * The close the gateway itself started (`endSocket`): its code and reason. Absent when the client closed
   * (or the connection was lost): the `disconnect` event then says `by: "client"`.
   */
  serverClose?: { code: number; reason: string };
  /** The connect hook answered `disconnect`: the socket is closed with this as soon as it opens. */
  closeOnOpen?: { code: number; reason: string };
};

export type Socket = WebSocket<Session>;

let nextId = 1;

export function newSession(identity: Identity, codec: Codec = JSON_CODEC, coalesce = false): Session {
  return {
    ...(identity.conn?.client ? { clientId: identity.conn.client } : {}),
    id: nextId++,
    ip: identity.ip,
    user: identity.principal.user,
    identity,
    codec,
    coalesce,
    subs: new Map(),
    closed: false,
    drainWaiters: [],
    rpcInFlight: 0,
  };
}

/**
 * Closes the socket from the gateway's side, with `code` and `reason` remembered as the gateway's (the
 * `disconnect` event's `by: "server"`): every close the gateway starts goes through here.
 */
export function endSocket(ws: Socket, code: number, reason: string): void {
  const s = ws.getUserData();
  s.serverClose ??= { code, reason };
  ws.end(s.codec.closeCode?.(code) ?? code, reason);
}

/**
 * The fan-out core's view of a uWS socket (made once per socket). A class, not an object literal of closures
 * and a getter: a literal with a getter gets a dictionary of its own and six closures per socket, about 1 KB
 * of heap each (a heap snapshot of 5,000 sockets); an instance of this class is one small object.
 */
class UwsFanoutSocket implements FanoutSocket {
  constructor(
    private readonly ws: Socket,
    private readonly s: Session,
  ) {}

  get closed(): boolean {
    return this.s.closed;
  }

  get codec(): Codec {
    return this.s.codec;
  }

  get coalesce(): boolean {
    return this.s.coalesce;
  }

  send(frame: Uint8Array | string): number {
    sendActivity.note();
    return this.ws.send(frame, this.s.codec.binary, this.s.compress === true);
  }

  cork(fn: () => void): void {
    this.ws.cork(fn);
  }

  bufferedAmount(): number {
    return this.ws.getBufferedAmount();
  }

  joinTopic(topic: string, coalesced?: boolean): void {
    this.ws.subscribe(socketTopic(topic, this.s.codec, coalesced === true && this.s.coalesce));
  }

  onDrained(fn: () => void): void {
    this.s.drainWaiters.push(fn);
  }
}

/** The fan-out core's view of a uWS socket (made once per socket). */
export function fanoutSocket(ws: Socket): FanoutSocket {
  const s = ws.getUserData();
  s.port ??= new UwsFanoutSocket(ws, s);
  return s.port;
}

/** Sends a frame in the socket's codec unless the socket is already closed (async replies can outlive the socket). */
export function sendFrame(ws: Socket, frame: ServerFrame): void {
  if (ws.getUserData().closed) return;
  sendEncoded(ws, ws.getUserData().codec.encode(frame));
}

/** Sends a frame already encoded in the socket's codec (`sendFrame` when it must be measured first). */
export function sendEncoded(ws: Socket, data: string | Uint8Array): void {
  const s = ws.getUserData();
  // A frame the socket's protocol has no counterpart of is encoded as nothing (protocol/centrifuge/json.ts).
  if (s.closed || data.length === 0) return;
  ws.cork(() => {
    ws.send(data, s.codec.binary, false);
  });
}

/**
 * Sends an `err` frame and counts it in `fanout_bad_frames_total` by its code: every `err` a socket gets goes
 * through here, so that the metric is the count of error frames (answers to frames and unsolicited ones alike).
 */
export function sendErr(
  ws: Socket,
  counter: Metrics["badFrames"],
  id: Id | undefined,
  code: ErrorCode,
  message: string,
  temporary?: boolean,
  appCode?: string,
): void {
  if (ws.getUserData().closed) return;
  counter.labels(code).inc();
  sendFrame(ws, { op: "err", id, code, message, temporary: temporary ?? WIRE_ERRORS[code].temporary, ...(appCode !== undefined ? { appCode } : {}) });
}

/** A client id made at the upgrade (16 characters of base64url), as `clientIdOf` makes one later. */
export const newClientId = (): string => randomBytes(12).toString("base64url");

/** The connection's client id (presence members and events name it): 16 characters of base64url, made once. */
export function clientIdOf(ws: Socket): string {
  const s = ws.getUserData();
  s.clientId ??= newClientId();
  return s.clientId;
}
