// The load generator's own CPU, so a saturated client machine is not mistaken for a slow server.
import { cpuUsage } from "node:process";

/** Share of one core (user + system, in %) used since the previous call. */
export class CpuMeter {
  private last = cpuUsage();
  private lastAt = performance.now();

  sample(): number {
    const now = performance.now();
    const u = cpuUsage(this.last);
    this.last = cpuUsage();
    const wallUs = (now - this.lastAt) * 1000;
    this.lastAt = now;
    return wallUs > 0 ? ((u.user + u.system) / wallUs) * 100 : 0;
  }
}

/** Above this share of one core a load-generating process counts as saturated. */
export const SATURATED_PCT = 90;

/** CPU figures of one process over a run. */
export type CpuSummary = {
  name: string;
  /** Mean % of one core over the seconds in which messages were flowing (all seconds if none). */
  avgPct: number;
  peakPct: number;
  /** Seconds above SATURATED_PCT while messages were flowing. */
  saturatedS: number;
};

export class CpuTrack {
  private busySum = 0;
  private busyN = 0;
  private allSum = 0;
  private allN = 0;
  private peak = 0;
  private saturated = 0;

  constructor(readonly name: string) {}

  add(pct: number, flowing: boolean): void {
    this.allSum += pct;
    this.allN++;
    if (pct > this.peak) this.peak = pct;
    if (!flowing) return;
    this.busySum += pct;
    this.busyN++;
    if (pct > SATURATED_PCT) this.saturated++;
  }

  summary(): CpuSummary {
    const avg = this.busyN ? this.busySum / this.busyN : this.allN ? this.allSum / this.allN : 0;
    return { name: this.name, avgPct: avg, peakPct: this.peak, saturatedS: this.saturated };
  }
}
