import type { WebSocket } from "../uws.js";
import type { CatchUp } from "../fanout/catchup.js";
import type { DurableSub } from "../fanout/durable-sub.js";
import { ANONYMOUS, type Principal } from "../auth/principal.js";
import type { FrameLimiter } from "../limits/frame-rate.js";

/** One subscription of one socket. */
export type SubState = {
  readonly pattern: string;
  readonly topic: string;
  /** Set while the broker side is starting; an unsub meanwhile cancels it. */
  pending: boolean;
  cancelled: boolean;
  /** Subscribed to the feed's uWS topic (live delivery by uWS). */
  joined: boolean;
  /** Replaying to this socket before joining. */
  catchup?: CatchUp;
  /** Durable (acked) subscription: per-socket delivery from a JetStream durable consumer. */
  durable?: DurableSub;
  /** While paused for backpressure: the last seq this socket was sent, and the feed's count then. */
  resumeAfter: number;
  pausedAtCount: number;
};

/** Per-socket state (uWS user data). */
export type Session = {
  readonly id: number;
  readonly ip: string;
  /** Authenticated user (JWT `sub`); "anon" when auth is off. Durable names are scoped by it. */
  user: string;
  /** The token's claims: channel permissions and expiry (allow-all ANONYMOUS when auth is off); see auth/. */
  principal: Principal;
  /** Closes the socket with 4001 at token expiry; re-armed by `refresh`. */
  expiryTimer?: NodeJS.Timeout;
  /** Inbound frame allowance (FRAME_RATE); undefined when unlimited. */
  frameLimit?: FrameLimiter;
  readonly subs: Map<string, SubState>;
  closed: boolean;
  /** Out of live delivery because its send buffer crossed the backpressure threshold. */
  paused: boolean;
  pausedSince: number;
  /** Catch-up readers waiting for the socket's buffer to drain. */
  drainWaiters: (() => void)[];
};

export type Socket = WebSocket<Session>;

let nextId = 1;

export function newSession(ip: string, user = "anon"): Session {
  return { id: nextId++, ip, user, principal: ANONYMOUS, subs: new Map(), closed: false, paused: false, pausedSince: 0, drainWaiters: [] };
}

export function newSub(pattern: string, topic: string): SubState {
  return { pattern, topic, pending: true, cancelled: false, joined: false, resumeAfter: 0, pausedAtCount: 0 };
}

/** Sends a text frame unless the socket is already closed (async replies can outlive the socket). */
export function sendText(ws: Socket, text: string): void {
  const s = ws.getUserData();
  if (s.closed) return;
  ws.cork(() => {
    ws.send(text, false, false);
  });
}
