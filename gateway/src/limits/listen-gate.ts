import { readFileSync } from "node:fs";
import { CAP_AUTO } from "../config/sections/server.js";

/**
 * Open files a worker keeps besides its connections (NATS, listeners, module files, pipes, HTTP requests in
 * flight) and the connections it may accept past its cap in one turn of the loop (one accept queue's worth),
 * with auto: 5 % of the open-files limit, at least this.
 */
export const MIN_FD_RESERVE = 512;

/** The process's soft open-files limit (Node has raised it to the hard one), or undefined where unknown or unlimited. */
export function openFilesLimit(limits = readProcLimits()): number | undefined {
  const m = /^Max open files\s+(\S+)/m.exec(limits ?? "");
  const n = m ? Number(m[1]) : NaN;
  return Number.isSafeInteger(n) && n > 0 ? n : undefined;
}

function readProcLimits(): string | undefined {
  try {
    return readFileSync("/proc/self/limits", "utf8");
  } catch {
    return undefined;
  }
}

/** The connections one worker takes before it stops listening (undefined: no cap), from WORKER_MAX_CONNECTIONS. */
export function workerCap(setting: number, openFiles: number | undefined): number | undefined {
  if (setting > 0) return setting;
  if (setting !== CAP_AUTO || openFiles === undefined) return undefined;
  const cap = openFiles - Math.max(MIN_FD_RESERVE, Math.ceil(openFiles * 0.05));
  return cap > 0 ? cap : undefined;
}

/** Where a capped worker listens again: 10 % under its cap (at least one connection under it). */
export const lowWaterOf = (cap: number): number => cap - Math.max(1, Math.floor(cap / 10));

export type GateState = "listening" | "full" | "stopped";

/**
 * A worker's listeners against its connection cap. Every worker listens on the same port (SO_REUSEPORT) and
 * the kernel spreads new connections over the listening sockets, evenly or not. One that reaches its cap
 * closes its listeners, so the kernel hands new connections to the workers that still listen and none is
 * refused; it listens again once its connections fall to the low-water mark. The count is the worker's
 * connections reserved or open (every door: WebSocket, Centrifuge, SSE), told on each change.
 */
export class ListenGate {
  private current: GateState = "listening";
  readonly lowWater: number;

  constructor(
    readonly cap: number,
    private readonly listeners: { close(): void; open(): boolean },
    private readonly onChange: (state: GateState, count: number) => void = () => undefined,
  ) {
    this.lowWater = lowWaterOf(cap);
  }

  get state(): GateState {
    return this.current;
  }

  /** The worker's connection count changed to `count`. */
  counted(count: number): void {
    if (this.current === "listening" && count >= this.cap) {
      this.listeners.close();
      this.set("full", count);
    } else if (this.current === "full" && count <= this.lowWater && this.listeners.open()) this.set("listening", count);
  }

  /** For good (the worker drains): never listens again. */
  stop(): void {
    this.current = "stopped";
  }

  private set(state: GateState, count: number): void {
    this.current = state;
    this.onChange(state, count);
  }
}
