// CPU of given processes (and their children) over a stretch of time, from /proc: used for the nats-server
// processes during each row and for the gateway during its publish rows, so a saturated server shows.
import { readFileSync } from "node:fs";

const CLK_TCK = 100;

/** A process and its descendants (the gateway's primary and its workers). */
function tree(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const t of readFileSync(`/proc/${out[i]}/task/${out[i]}/children`, "utf8").trim().split(/\s+/)) if (t) out.push(Number(t));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

/** CPU seconds (user + system) used so far by one process; 0 once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return 0;
  }
}

/** Starts measuring; `read()` gives the CPU used since then (or since the previous read), in % of one core. */
export function cpuWindow(roots: readonly number[]): { read(): number } {
  const total = (): number => roots.flatMap(tree).reduce((a, p) => a + cpuSeconds(p), 0);
  let s0 = total();
  let t0 = performance.now();
  return {
    read() {
      const s = total();
      const t = performance.now();
      const pct = t > t0 ? ((s - s0) / ((t - t0) / 1000)) * 100 : 0;
      s0 = s;
      t0 = t;
      return pct;
    },
  };
}

/** The whole machine's busy and idle jiffies so far, from /proc/stat's first line. */
function machineJiffies(): { busy: number; total: number } {
  const stat = readFileSync("/proc/stat", "utf8");
  const f = stat.slice(0, stat.indexOf("\n")).trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  const idle = (f[3] ?? 0) + (f[4] ?? 0); // idle + iowait
  return { busy: total - idle, total };
}

/** Starts measuring; `read()` gives how busy all cores were since then, in % of the machine (100: no idle core time). */
export function machineWindow(): { read(): number } {
  let s0 = machineJiffies();
  return {
    read() {
      const s = machineJiffies();
      const pct = s.total > s0.total ? ((s.busy - s0.busy) / (s.total - s0.total)) * 100 : 0;
      s0 = s;
      return pct;
    },
  };
}
