import type { Logger } from "../log.js";

/**
 * Warnings that a failing dependency would repeat on every call: per key, the first is logged at once, then
 * at most one every `everyMs`, with how many were not logged since.
 */
export class WarnEvery {
  private readonly warned = new Map<string, { at: number; suppressed: number }>();

  constructor(
    private readonly log: Logger,
    private readonly everyMs: number,
    /** The field the key is logged under (`hook`, `type`). */
    private readonly keyField: string,
    private readonly level: "warn" | "error" = "warn",
  ) {}

  warn(key: string, fields: Record<string, unknown>, msg: string): void {
    const now = Date.now();
    const w = this.warned.get(key);
    if (w && now - w.at < this.everyMs) {
      w.suppressed++;
      return;
    }
    this.log[this.level]({ [this.keyField]: key, ...fields, ...(w?.suppressed ? { notLoggedSince: w.suppressed } : {}) }, msg);
    this.warned.set(key, { at: now, suppressed: 0 });
  }
}
