// bench:million's result (also what the capacity model reads: loadtest/capacity/model.mjs) and its report.
import type { KernelPerSocket } from "./kernel-mem.js";

/** Latency over every client of one phase, from the progress lines' one-second windows. */
export type Phase = {
  deliveries: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
  /** Seconds in which some delivery took longer than the gap between two messages (the steady phase's "behind"). */
  secondsOverGap: number;
  seconds: number;
};

export type MillionResult = {
  bench: "million";
  at: string;
  command: string;
  revision: string;
  load: string;
  cores: number;
  netns: boolean;
  clients: number;
  workers: number;
  procs: number;
  wave: number;
  /** BENCH_NODE_ARGS: node options of every gateway process (e.g. `--max-semi-space-size=1`); the clients' connect ramp, per second (0: none). Absent in older runs. */
  nodeArgs?: string[];
  ramp?: number;
  /** The baseline measured first in the same run: bare uWebSockets.js in one process with some of the same clients. */
  floor?: { clients: number; idleMB: number; perConnB: number };
  /** Connection attempts in flight per client process (sub-cluster --max-pending). Absent in older runs. */
  maxPending?: number;
  /**
   * The workers' connection cap (WORKER_MAX_CONNECTIONS; `cap` as the workers logged it, undefined when off),
   * net.ipv4.tcp_migrate_req in the bench's namespace, each worker's open files once every client subscribed,
   * how often a worker reached its cap (over the run) and how many were full then. Absent in runs before the cap.
   */
  cap?: {
    setting: string;
    cap: number | undefined;
    migrate: number | undefined;
    filesPerWorker: { min: number; max: number; each: number[] };
    reached: number;
    fullConnected: number;
  };
  /** Gateway start (spawn → "gateway ready"), s; every client subscribed, s. */
  startS: number;
  connectS: number;
  /** Before any socket: the primary's and each worker's RSS, and the primary's fan-in of every worker's metrics. */
  idle: { primaryMB: number; workerMeanMB: number; workerMaxMB: number; metricsMs: number; metricsBytes: number; statsMs: number; metricsConnectedMs: number };
  /** The gateway's node processes before and after the sockets; the client processes and nats-server after. */
  rss: {
    idleMB: number;
    connectedMB: number;
    perConnB: number;
    heapPerConnB: number;
    clientsMB: number;
    natsMB: number;
    /**
     * The same right after a full collection in every gateway process (idle, then connected): what the sockets
     * keep alive. Steadier from run to run than RSS as found, which also holds uncollected garbage. Absent in
     * runs before it was measured.
     */
    gc?: {
      idleMB: number;
      connectedMB: number;
      perConnB: number;
      /** The JS heap in use, the heap committed (in use or not), and the young generation's share of it. */
      heapPerConnB: number;
      heapCommittedPerConnB: number;
      youngPerConnB: number;
    };
  };
  kernel: KernelPerSocket & { availableBeforeMB: number; availableConnectedMB: number };
  /** The gateway's CPU (% of a core) while holding every socket with nothing to send. */
  idleCpuPct: number;
  one: Phase & { gatewayCpuS: number; natsCpuS: number; usPerDelivery: number };
  steady: Phase & { messages: number; rate: number; askedRate: number; gatewayCpuS: number; gatewayCpuPct: number; natsCpuS: number; usPerDelivery: number };
  counts: {
    received: number;
    expected: number;
    lost: number;
    duplicated: number;
    outOfOrder: number;
    connectFailures: number;
    /** Connection attempts that failed, by cause (ECONNREFUSED, ECONNRESET, timeout, …); retried by the client. */
    failuresByCause?: Record<string, number>;
    reconnects: number;
    subErrors: number;
    dropped: number;
    slowConsumerSwitches: number;
    slowConsumerClosed: number;
  };
  /** sub-cluster had to be stopped before every client had every message. */
  cut: boolean;
};

/** Everything that counts as an error: failed or repeated connections, lost, repeated or reordered deliveries, drops. */
export function errorsOf(r: MillionResult): number {
  const c = r.counts;
  const n = (x: number): number => (Number.isFinite(x) ? x : 0);
  return c.lost + c.duplicated + c.outOfOrder + c.connectFailures + c.reconnects + c.subErrors + n(c.dropped) + n(c.slowConsumerClosed) + (r.cut ? 1 : 0);
}

/** A steady rate as people read it: `1/s`, `2/s`, or `1 per 39 s` under one a second. */
export const rateText = (rate: number): string => (rate >= 1 ? `${f(rate, 2)}/s` : `1 per ${f(1 / rate)} s`);

const f = (n: number, d = 0): string => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });

export function millionReport(r: MillionResult): string {
  const k = r.kernel;
  const caches = Object.entries(k.caches)
    .filter(([, b]) => b > 8)
    .sort((a, b) => b[1] - a[1])
    .map(([name, b]) => `${name} ${f(b)} B`)
    .join(", ");
  return [
    "# bench:million — idle WebSockets on one machine",
    "",
    `Measured ${r.at.slice(0, 16).replace("T", " ")} UTC by \`${r.command}\` (${r.revision}) on ${r.cores} cores${r.netns ? " in a network namespace of its own" : ""}, ` +
      `load average ${r.load} at the end: gateway (${r.workers} workers, started ${r.wave || "all"} at a time), nats-server and ${r.procs} client processes of the ` +
      `native engine (\`sub-cluster --engine native\`), all on this machine, one channel` +
      (r.ramp ? `; clients connected at ${f(r.ramp)} a second` : "") +
      (r.maxPending ? `; at most ${f(r.maxPending)} connection attempts in flight per client process` : "") +
      (r.nodeArgs?.length ? `; gateway processes ran with \`${r.nodeArgs.join(" ")}\`` : "") +
      ".",
    "",
    "| clients | errors | connect all, s | gateway RSS per connection: as found / after a full GC | kernel per socket | one message to all: p50 / p99 / max ms | gateway CPU for it | steady: msgs at rate, seconds behind | steady p99 / max ms |",
    "|---:|---:|---:|---:|---:|---|---:|---|---|",
    `| ${f(r.clients)} | ${errorsOf(r)} | ${f(r.connectS, 1)} | **${f(r.rss.perConnB)} / ${r.rss.gc ? f(r.rss.gc.perConnB) : "–"} B** | ${f(k.perSocketB)} B | **${f(r.one.p50Ms)} / ${f(r.one.p99Ms)} / ${f(r.one.maxMs)}** | ${f(r.one.gatewayCpuS, 2)} s (${f(r.one.usPerDelivery, 2)} µs per delivery) | ${r.steady.messages} at ${rateText(r.steady.rate)}, **${r.steady.secondsOverGap}** | ${f(r.steady.p99Ms)} / ${f(r.steady.maxMs)} |`,
    "",
    `- **Deliveries**: ${f(r.counts.received)} of ${f(r.counts.expected)} expected; lost ${r.counts.lost}, duplicated ${r.counts.duplicated}, out of order ${r.counts.outOfOrder}; ` +
      `connect failures ${r.counts.connectFailures}, reconnects ${r.counts.reconnects}, subscribe errors ${r.counts.subErrors}; the gateway dropped ${r.counts.dropped}, ` +
      `switched ${r.counts.slowConsumerSwitches} slow consumers and closed ${r.counts.slowConsumerClosed}.`,
    ...capLine(r),
    `- **Start-up**: "gateway ready" ${f(r.startS, 1)} s after the spawn. Idle, before any socket: primary ${f(r.idle.primaryMB, 1)} MB, each worker ${f(r.idle.workerMeanMB, 1)} MB on average ` +
      `(largest ${f(r.idle.workerMaxMB, 1)} MB). The primary's fan-in of ${r.workers} workers' metrics: \`/metrics\` ${f(r.idle.metricsMs)} ms (${f(r.idle.metricsBytes / 1024)} KB), ` +
      `\`/v1/stats\` ${f(r.idle.statsMs)} ms, \`/metrics\` with every socket open ${f(r.idle.metricsConnectedMs)} ms.`,
    `- **Memory**: the gateway's node processes ${f(r.rss.idleMB)} → ${f(r.rss.connectedMB)} MB (RSS from /proc, before the sockets and once it settled after the last one subscribed), ` +
      `${f(r.rss.perConnB)} B per connection, of which the workers' JS heap in use ${f(r.rss.heapPerConnB)} B (fanout_worker_state).` +
      (r.rss.gc
        ? ` After a full collection in every gateway process (idle and connected): ${f(r.rss.gc.idleMB)} → ${f(r.rss.gc.connectedMB)} MB, **${f(r.rss.gc.perConnB)} B per connection**: ` +
          `JS heap in use ${f(r.rss.gc.heapPerConnB)} B, heap committed but empty ${f(r.rss.gc.heapCommittedPerConnB - r.rss.gc.heapPerConnB)} B (of the committed heap, the young generation ${f(r.rss.gc.youngPerConnB)} B), ` +
          `outside the JS heap (uWS.js, malloc) ${f(r.rss.gc.perConnB - r.rss.gc.heapCommittedPerConnB)} B.`
        : "") +
      (r.floor
        ? ` Bare uWebSockets.js in one process, measured first in this run with ${f(r.floor.clients)} of the same clients, held a socket for ${f(r.floor.perConnB)} B: the gateway's RSS per connection is **${f(r.rss.perConnB / r.floor.perConnB, 2)}×** it.`
        : "") +
      ` Kernel: ${f(k.perSocketB)} B per socket over ${f(k.sockets)} TCP sockets (both ends of each connection are on this machine): ` +
      `slab ${f(k.slabPerSocketB)} B, TCP buffers ${f(k.buffersPerSocketB)} B; by cache ${caches || "(no /proc/slabinfo)"}. ` +
      `The clients' processes held ${f(r.rss.clientsMB)} MB, nats-server ${f(r.rss.natsMB)} MB; available memory ${f(r.kernel.availableBeforeMB)} → ${f(r.kernel.availableConnectedMB)} MB.`,
    `- **Idle**: holding every socket with nothing to send cost the gateway ${f(r.idleCpuPct, 1)} % of a core (5 s window).`,
    `- **One message to all**: publish → frame read by the client (the kernel's receive stamp), over every client: p50 ${f(r.one.p50Ms)} ms, p99 ${f(r.one.p99Ms)} ms, ` +
      `the last delivery ${f(r.one.maxMs)} ms after the publish. Gateway CPU ${f(r.one.gatewayCpuS, 2)} s, nats-server ${f(r.one.natsCpuS, 2)} s.`,
    `- **Steady**: ${r.steady.messages} messages ${f(1000 / r.steady.rate)} ms apart to every client` +
      (r.steady.rate !== r.steady.askedRate
        ? ` (asked: ${r.steady.askedRate} a second; one message took ${f(r.one.maxMs)} ms to reach all, so the gap became 1.5 times that, in whole seconds)`
        : "") +
      `: p50 ${f(r.steady.p50Ms)} / p99 ${f(r.steady.p99Ms)} / max ${f(r.steady.maxMs)} ms; ` +
      `${r.steady.secondsOverGap} of ${r.steady.seconds} one-second windows held a delivery later than the gap to the next message (a socket falling behind). ` +
      `Gateway CPU ${f(r.steady.gatewayCpuPct)} % of a core (${f(r.steady.usPerDelivery, 2)} µs per delivery), nats-server ${f(r.steady.natsCpuS, 2)} s.`,
  ].join("\n");
}

/** The workers' cap and how the connections spread over the workers (runs with the cap only). */
function capLine(r: MillionResult): string[] {
  const c = r.cap;
  if (!c) return [];
  const causes = Object.entries(r.counts.failuresByCause ?? {})
    .map(([k, n]) => `${k} ${f(n)}`)
    .join(", ");
  return [
    `- **Spread over the workers**: WORKER_MAX_CONNECTIONS=${c.setting} (${c.cap ? `${f(c.cap)} connections per worker` : "no cap"}), ` +
      `net.ipv4.tcp_migrate_req=${c.migrate ?? "unknown"}; once every client subscribed, open files per worker ${f(c.filesPerWorker.min)} to ${f(c.filesPerWorker.max)} ` +
      `(about 30 are not sockets); ${f(c.fullConnected)} workers full (listeners closed) then; over the run a worker reached its cap and closed its listeners ${f(c.reached)} times. ` +
      `Failed connection attempts (each retried by its client): ${causes || "none"}.`,
  ];
}
