import { pino, type Logger } from "pino";
import type { LogLevel } from "./config/settings.js";

export type { Logger };

/** JSON logs to stdout. Hot paths must not log per message at info; gate debug work on `isLevelEnabled`. */
export function createLogger(level: LogLevel, bindings: Record<string, unknown>): Logger {
  return pino({ level, base: { pid: process.pid, ...bindings }, timestamp: pino.stdTimeFunctions.isoTime });
}
