import type { ClientEvents, ClientState, Receiver } from "../receiver.js";
import type { FromSpec } from "../options.js";

/** One subscriber connection, whatever the target. */
export interface SubClient {
  readonly state: ClientState;
  /** Connects and subscribes; resolves after the first attempt, whether it worked or not. */
  start(): Promise<void>;
  /** Closes for good; no reconnect after this. */
  stop(): Promise<void>;
}

export type ClientSetup = {
  host: string;
  port: number;
  path: string;
  channels: readonly string[];
  from: FromSpec | null;
  rx: Receiver;
  events: ClientEvents;
};

/** Reconnect delay: exponential from 100 ms to 5 s with jitter, so a restarted server is not stampeded. */
export function backoffMs(attempt: number): number {
  const base = Math.min(5_000, 100 * 2 ** Math.min(attempt, 10));
  return base / 2 + Math.random() * (base / 2);
}
