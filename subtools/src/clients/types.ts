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
  /** Source address to connect from (spreading over loopback addresses), or undefined for the kernel's choice. */
  localAddress: string | undefined;
  /** Source port with localAddress when the plan assigns one (after an EADDRINUSE, the kernel picks instead). */
  localPort?: number;
  channels: readonly string[];
  from: FromSpec | null;
  rx: Receiver;
  events: ClientEvents;
  gate: ConnectGate;
};

/** Reconnect delay: exponential from 100 ms to 5 s with jitter, so a restarted server is not stampeded. */
export function backoffMs(attempt: number): number {
  const base = Math.min(5_000, 100 * 2 ** Math.min(attempt, 10));
  return base / 2 + Math.random() * (base / 2);
}

/**
 * Failures of this machine rather than of the server (no ephemeral port or address left, no file
 * descriptor): retrying soon cannot help, so such clients wait 5–10 s between attempts instead of spinning.
 */
export const LOCAL_EXHAUSTION = new Set(["EADDRNOTAVAIL", "EADDRINUSE", "EMFILE", "ENFILE", "ENOBUFS"]);

export function retryDelayMs(attempt: number, reason: string): number {
  return LOCAL_EXHAUSTION.has(reason) ? 5_000 + Math.random() * 5_000 : backoffMs(attempt);
}

/** Connection attempts in flight at once per process, first attempts and retries alike (FIFO beyond). */
export class ConnectGate {
  private inFlight = 0;
  private readonly queue: (() => void)[] = [];
  private head = 0;

  constructor(readonly max: number) {}

  enter(attempt: () => void): void {
    if (this.inFlight < this.max) {
      this.inFlight++;
      attempt();
    } else this.queue.push(attempt);
  }

  /** Called once per entered attempt, when it has opened or failed. */
  leave(): void {
    if (this.head < this.queue.length) {
      const next = this.queue[this.head]!;
      this.queue[this.head++] = noop;
      if (this.head > 1024 && this.head * 2 > this.queue.length) {
        this.queue.splice(0, this.head);
        this.head = 0;
      }
      next();
    } else this.inFlight--;
  }

  get waiting(): number {
    return this.queue.length - this.head;
  }
}

const noop = (): void => undefined;

/** Short code of a connection error, for counting failures by cause. */
export function errorReason(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e && typeof e.code === "string") return e.code;
  const m = typeof e?.message === "string" ? /Unexpected server response: (\d+)/.exec(e.message) : null;
  return m ? `HTTP_${m[1]}` : "error";
}
