import type { WebSocket } from "../uws.js";

/** One subscription of one socket. */
export type SubState = {
  readonly pattern: string;
  readonly topic: string;
  /** Set while the broker feed is starting; an unsub meanwhile cancels it. */
  pending: boolean;
  cancelled: boolean;
  /** Feed counters when live delivery to this socket was paused (backpressure accounting). */
  pausedAtCount: number;
};

/** Per-socket state (uWS user data). */
export type Session = {
  readonly id: number;
  readonly ip: string;
  readonly subs: Map<string, SubState>;
  closed: boolean;
  /** Out of live delivery because its send buffer crossed the backpressure threshold. */
  paused: boolean;
  pausedSince: number;
};

export type Socket = WebSocket<Session>;

let nextId = 1;

export function newSession(ip: string): Session {
  return { id: nextId++, ip, subs: new Map(), closed: false, paused: false, pausedSince: 0 };
}

/** Sends a text frame unless the socket is already closed (async replies can outlive the socket). */
export function sendText(ws: Socket, text: string): void {
  const s = ws.getUserData();
  if (s.closed) return;
  ws.cork(() => {
    ws.send(text, false, false);
  });
}
