// Printing, in the label style of the users' original tool:
//   [  cluster-master  ] \tTotal received: 10400
//   [  cluster-master  ] \t\t MIN: 0.397ms
import { fmtOffset, LatencyStats as Stats, ms3, ms6, SATURATED_PCT, type LatencyStats } from "./shared/mod.js";
import type { SubResult } from "./result.js";
import type { ClockSection } from "./result.js";

/** What a failure code means for the person running the tool. */
export const FAILURE_HINTS: Readonly<Record<string, string>> = {
  EADDRNOTAVAIL:
    "no ephemeral port left for this source/destination address pair (or the source address is not on this host): spread over source addresses (automatic on loopback, --local-address otherwise) or load hosts",
  EADDRINUSE: "the source port or address is taken: spread over source addresses or load hosts",
  EMFILE: "the process ran out of file descriptors (ulimit -n): use more processes (-c) with fewer clients each (-n)",
  ENFILE: "the machine ran out of file descriptors (fs.file-max)",
  ECONNREFUSED: "nothing listens there, or its listen backlog overflowed",
  ECONNRESET: "the server reset the connection during the upgrade",
  ETIMEDOUT: "connect and upgrade took over 10 s: the server is saturated or unreachable",
  HTTP_429: "the gateway's per-IP limits refused the upgrade: set MAX_CONNECTIONS_PER_IP and CONNECT_RATE_PER_IP to -1 for a benchmark",
  HTTP_503: "the server refused more connections (MAX_CONNECTIONS per worker) or is draining",
  pending: "still connecting when the run ended",
  "connection lost": "the connection closed before the upgrade finished",
};

const n = (v: number): string => v.toLocaleString("en-US");

/** "EADDRNOTAVAIL ×11,877 (hint), ECONNREFUSED ×3 (hint)". */
export function tallyLine(t: Record<string, number>): string {
  return Object.entries(t)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ×${n(v)}${FAILURE_HINTS[k] ? ` (${FAILURE_HINTS[k]})` : ""}`)
    .join("; ");
}

/** How the latencies relate to the clocks of the hosts involved. */
export function clockLines(c: ClockSection | null | undefined, label = ""): string[] {
  if (!c) return [`Clock${label}: unknown (a result without clock information)`];
  const self = c.self
    ? `this host ${c.host} is ${fmtOffset(-c.self.offsetUs)} from ${c.self.reference} (± ${Math.round(c.self.rttUs / 2)} µs)`
    : `this host ${c.host}: offset unknown (${c.selfReason ?? "?"})`;
  const others = c.publishers.filter((p) => !p.sameHost);
  const hosts = [...new Set(others.map((p) => p.host))];
  switch (c.status) {
    case "no-messages":
      return [`Clock${label}: ${self}; no messages`];
    case "single-host":
      return [`Clock${label}: publishers on this host, one clock: latencies need no correction (${self})`];
    case "corrected": {
      const corr = hosts.map((h) => {
        const p = others.find((x) => x.host === h)!;
        return `${h} ${fmtOffset(-(p.offsetUs ?? 0))}, correction ${fmtOffset(p.correctionUs)}`;
      });
      return [`Clock${label}: ${self}; publishers on ${corr.join(", ")}: latencies corrected`];
    }
    case "uncorrected":
      return [
        `WARNING: clock${label}: publishers on ${hosts.join(", ")} sent no clock offset or this host has none (${self}): their latencies include the hosts' clock skew`,
      ];
  }
}

export const TAG = "[  cluster-master  ] \t";

/** The latency block; `suffix` is " (current)" for the live window. */
export function latencyLines(s: LatencyStats, suffix = "", percentiles: readonly number[] = [50, 90, 99, 99.9]): string[] {
  const lines = [
    `\t MIN${suffix}: ${ms3(s.count ? s.min : NaN)}`,
    `\t MAX${suffix}: ${ms3(s.count ? s.max : NaN)}`,
    `\t MEAN${suffix}: ${ms6(s.meanUs)}`,
    `\t HARMONIC MEAN${suffix}: ${ms6(s.harmonicMeanUs)}`,
  ];
  for (const p of percentiles) lines.push(`\t p${p}${suffix}: ${ms3(s.percentileUs(p))}`);
  return lines;
}

/** One line per second while running. */
export function liveLine(elapsedS: number, connected: number, clients: number, rate: number, w: LatencyStats, cpuMax: number): string {
  const f = (label: string, v: string): string => `${label} (current): ${v}`;
  return (
    TAG +
    [
      `${elapsedS}s clients ${connected}/${clients}`,
      `${Math.round(rate)} msg/s`,
      [
        f("MIN", ms3(w.count ? w.min : NaN)),
        f("MAX", ms3(w.count ? w.max : NaN)),
        f("MEAN", ms3(w.meanUs)),
        f("HARMONIC MEAN", ms3(w.harmonicMeanUs)),
        f("p50", ms3(w.percentileUs(50))),
        f("p99", ms3(w.percentileUs(99))),
      ].join(" "),
      `cpu max ${cpuMax.toFixed(0)}%`,
    ].join(" | ")
  );
}

/** The cumulative report printed at the end of a run and by `merge`. */
export function reportLines(r: SubResult): string[] {
  const c = r.counts;
  const lat = Stats.fromJSON(r.latency);
  const out: string[] = [];
  const add = (s: string): void => {
    out.push(TAG + s);
  };
  add(`Target: ${r.target} ${r.hosts.join(",")}:${r.port} channels ${r.channels.join(",")}; ${(r.durationMs / 1000).toFixed(1)}s, stopped by ${r.stopReason}`);
  const planned = c.planned || r.processes * r.clientsPerProcess;
  add(
    `Clients: ${c.clients} (connected at least once ${c.everConnected}, peak together ${c.peakConnected}, connect failures ${c.connectFailures}, reconnects ${c.reconnects}, subscribe errors ${c.subErrors})`,
  );
  const missing = planned - c.everConnected;
  if (missing > 0) {
    const parts: string[] = [];
    const never = { ...(r.neverConnected ?? {}) };
    const unstarted = planned - c.clients;
    if (unstarted > 0) parts.push(`${n(unstarted)} never started (the run ended while they were ramping up, or their process died first)`);
    if (Object.keys(never).length) parts.push(`never subscribed, by the last failure: ${tallyLine(never)}`);
    if (c.subErrors) parts.push(`subscribe refused ${n(c.subErrors)} times`);
    add(`WARNING: ${n(missing)} of ${n(planned)} clients never subscribed${parts.length ? ": " + parts.join("; ") : ""}`);
  }
  if (r.failures && c.connectFailures > 0)
    add(
      `Connect failures by cause: ${Object.entries(r.failures)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ×${n(v)}`)
        .join(", ")}`,
    );
  for (const note of r.notes ?? []) add(note);
  add(`Total received: ${c.received}`);
  add(`Expected: ${c.expected}`);
  add(`Lost: ${c.lost}`);
  add(`Duplicated: ${c.duplicated}`);
  add(`Out-of-order: ${c.outOfOrder}${c.late ? ` (${c.late} older than the tracking window)` : ""}`);
  add(`End markers: ${c.endMarkers}${c.badFrames ? `; unreadable frames: ${c.badFrames}` : ""}`);
  for (const l of latencyLines(lat)) add(l);
  const rc = r.receiveClock;
  if (rc && rc.source !== "process") {
    const d = rc.toolDelay;
    const after =
      d && d.count
        ? `; this tool read them ${(d.sumUs / d.count / 1000).toFixed(3)} ms later on average (max ${(d.maxUs / 1000).toFixed(2)} ms), which is not counted`
        : "";
    add(
      rc.source === "kernel"
        ? `Receive time: the kernel's stamp when the bytes reached each socket (SO_TIMESTAMPNS)${after}`
        : `Receive time: the kernel's stamp where the kernel gave one, else when this tool read the bytes${after}`,
    );
  }
  if (lat.clamped) add(`WARNING: ${lat.clamped} latencies below 1 µs were counted as 1 µs (clocks of publisher and subscriber hosts disagree?)`);
  if (r.mergedClocks) for (const m of r.mergedClocks) for (const l of clockLines(m.clock, ` (${m.name})`)) add(l);
  else if (r.clock) for (const l of clockLines(r.clock)) add(l);
  for (const p of r.cpu) add(`CPU ${p.name}: avg ${p.avgPct.toFixed(1)}% peak ${p.peakPct.toFixed(1)}% of one core`);
  const hot = r.cpu.filter((p) => p.saturatedS > 0);
  if (hot.length) {
    const why =
      rc?.source === "kernel"
        ? "latencies use the kernel's receive stamps, so they leave out this tool's queueing, but a saturated tool takes CPU from a server on the same host"
        : "latencies include this tool's own queueing";
    add(
      `WARNING: load generator saturated: ${hot.map((p) => `${p.name} ${p.saturatedS}s`).join(", ")} above ${SATURATED_PCT}% of a core while receiving; ${why} — use more processes or hosts`,
    );
  }
  return out;
}
