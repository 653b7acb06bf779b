// bench:regions' pure parts: the one-way delay its flags ask for, the tc commands that put that delay on the
// inter-region links only, the latency summary (excess over the one-way delay), and the cross-region resume's
// verdict through the chaos run's checker (loadtest/chaos/checker.ts). No sockets, no processes.
import { check, type Receipt, type StoredMsg } from "../../chaos/checker.js";
import { percentile } from "../common.js";
import { FlagError } from "../../kit/flags.js";

/** The one-way delay between regions: --delay (one way), or half of --rtt; not both; 40 ms when neither is given. */
export function oneWayDelayMs(flags: { delay?: number | undefined; rtt?: number | undefined }): number {
  if (flags.delay !== undefined && flags.rtt !== undefined) throw new FlagError("--delay and --rtt both set the link's delay: give one");
  if (flags.rtt !== undefined) return flags.rtt / 2;
  return flags.delay ?? 40;
}

/**
 * The `tc` argument lists (each run as `tc …` inside the bench's namespace) that delay, on the namespace's
 * loopback, only the packets to or from `ports` (the regions' gateway link addresses) by `delayMs`: a prio
 * qdisc with a fourth band the default priority map never uses, netem on that band, and a u32 filter per port
 * and direction sending those packets to it. Every other packet (clients, the gateways' own NATS links) goes
 * through undelayed.
 */
export function netemCommands(dev: string, ports: readonly number[], delayMs: number): string[][] {
  const cmds: string[][] = [
    ["qdisc", "add", "dev", dev, "root", "handle", "1:", "prio", "bands", "4", "priomap", ..."1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1".split(" ")],
    ["qdisc", "add", "dev", dev, "parent", "1:4", "handle", "40:", "netem", "delay", `${delayMs}ms`],
  ];
  for (const p of ports)
    for (const dir of ["dport", "sport"])
      cmds.push(["filter", "add", "dev", dev, "parent", "1:", "protocol", "ip", "prio", "1", "u32", "match", "ip", dir, String(p), "0xffff", "flowid", "1:4"]);
  return cmds;
}

export type LatencySummary = { samples: number; p50Ms: number; p99Ms: number; maxMs: number; excessP50Ms: number; excessP99Ms: number };

/** Percentiles of `latenciesMs`, and the same less the one-way delay (what the path adds beyond the link). */
export function latencySummary(latenciesMs: readonly number[], oneWayMs: number): LatencySummary {
  const s = [...latenciesMs].sort((a, b) => a - b);
  const p50 = percentile(s, 50);
  const p99 = percentile(s, 99);
  const r = (x: number) => Math.round(x * 100) / 100;
  return { samples: s.length, p50Ms: r(p50), p99Ms: r(p99), maxMs: r(s.at(-1) ?? NaN), excessP50Ms: r(p50 - oneWayMs), excessP99Ms: r(p99 - oneWayMs) };
}

/** A message of the resume leg as a client got it: its seq, the payload's index, and which region's socket it came on. */
export type ResumeReceipt = { seq: number; i: number; conn: 1 | 2 };

export type ResumeVerdict = { lost: number; duplicated: number; outOfOrder: number; mismatched: number; firstLost?: number };

/**
 * The resume's verdict: `stored` are the published messages (seq and index, as acknowledged), `got` what the
 * client received on its first region's socket and then on the second's, in arrival order. Every stored
 * message from the first on is owed exactly once and in order.
 */
export function resumeVerdict(channel: string, stored: readonly { seq: number; i: number }[], got: readonly ResumeReceipt[]): ResumeVerdict {
  const truth: StoredMsg[] = stored.map((m) => ({ seq: m.seq, channel, id: String(m.i) }));
  const receipts: Receipt[] = got.map((g, k) => ({ t: k, channel, seq: g.seq, id: String(g.i), conn: g.conn }));
  const fromSeq = Math.min(...stored.map((m) => m.seq));
  const r = check(truth, [{ client: "mover", kind: "resume", pattern: channel, fromSeq, receipts }], []);
  const firstLost = r.violations.find((v) => v.what === "lost")?.seq;
  return { lost: r.lost, duplicated: r.duplicated, outOfOrder: r.outOfOrder, mismatched: r.mismatched, ...(firstLost !== undefined ? { firstLost } : {}) };
}
