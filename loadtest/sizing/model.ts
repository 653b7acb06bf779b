// The capacity model: how many gateway instances (and what NATS cluster) a workload needs, from costs the
// benches measured (costs.ts reads them from loadtest/results/). Pure arithmetic, tested in process
// (loadtest/test/unit/sizing-model.test.ts); `npm run capacity -- model` prints it (cli.ts).

import { CAP_AUTO } from "../../gateway/src/config/sections/server.js";
import { workerCap } from "../../gateway/src/limits/listen-gate.js";

/** What one connection, one delivery, one publish and one idle worker cost, as measured. */
export type Costs = {
  /** Gateway resident memory per connection (bench:million: RSS after the sockets minus before, per socket). */
  gatewayBytesPerConn: number;
  /** Kernel memory per TCP socket (slab and buffers, bench:million); the gateway's host holds one per connection. */
  kernelBytesPerSocket: number;
  /** Resident memory of one idle worker and of the primary (bench:million, before any socket). */
  workerBytes: number;
  primaryBytes: number;
  /** Gateway CPU per delivery (µs), the idle cost taken out (bench:million's steady phase). */
  usPerDelivery: number;
  /** Gateway CPU of one idle worker holding its sockets (share of a core). */
  idleCoresPerWorker: number;
  /** Gateway CPU per message published through it (µs; bench:publish, HTTP publish). */
  usPerPublish: number;
  /** nats-server CPU per message stored (µs, one replica; bench:publish) and per message delivered to a worker (bench:million). */
  natsUsPerPublish: number;
  natsUsPerWorkerDelivery: number;
};

/** The workload to size for. */
export type Workload = {
  connections: number;
  channels: number;
  /** Messages published per second, all channels together. */
  publishRate: number;
  /** Sockets each message reaches (subscribers of its channel). */
  fanout: number;
  payloadBytes: number;
};

/** The machines it runs on. */
export type Shape = {
  coresPerInstance: number;
  memoryBytesPerInstance: number;
  /** Open files one process may hold (LimitNOFILE, `ulimit -n`). */
  fdLimit: number;
  /** The share of each resource a plan may use (headroom for peaks, restarts and reconnect storms). */
  utilisation: number;
  natsCoresPerServer: number;
  /** JetStream replicas of the channel stream: each publish is stored on this many servers. */
  replicas: number;
};

export type Resource = "CPU" | "memory" | "file descriptors";

export type Plan = {
  instances: number;
  workersPerInstance: number;
  connectionsPerInstance: number;
  deliveriesPerSecond: number;
  /** Each instance's need of each resource and what it has. */
  cpu: { cores: number; of: number };
  memory: { bytes: number; of: number };
  files: { perProcess: number; of: number };
  /** The resource closest to its limit (the one that runs out first as the load grows). */
  first: Resource | "NATS throughput";
  totalCores: number;
  totalMemoryBytes: number;
  /** Bytes a second the instances write to sockets (payload and about 60 bytes of frame and metadata each). */
  egressBytesPerSecond: number;
  nats: {
    servers: number;
    cores: number;
    /** The stream leader's share: every publish of one stream goes through one server. */
    leaderCores: number;
    /** A stream's leader would need more than one server's cores: split the channels over several streams. */
    leaderOverloaded: boolean;
    workerDeliveriesPerSecond: number;
  };
};

/** Open files a worker keeps besides its sockets (NATS, listeners, the module files, pipes). */
export const FILES_PER_WORKER = 100;
/** Bytes on the wire per delivery besides the payload (WebSocket header and the frame's JSON: channel, seq, ts). */
export const FRAME_OVERHEAD_BYTES = 60;
const MAX_INSTANCES = 1_000_000;

/** Each instance's figures when the workload is spread over `n` of them. */
function perInstance(c: Costs, w: Workload, s: Shape, n: number) {
  const conns = Math.ceil(w.connections / n);
  // A worker takes connections up to its cap (WORKER_MAX_CONNECTIONS=auto: the open-files limit less 5 %, at least 512).
  const room = workerCap(CAP_AUTO, s.fdLimit) ?? 0;
  const workers = Math.max(s.coresPerInstance, room > 0 ? Math.ceil(conns / room) : Infinity);
  const deliveries = (w.publishRate * w.fanout) / n;
  const cores = (deliveries * c.usPerDelivery + w.publishRate * (c.usPerPublish / n)) / 1e6 + workers * c.idleCoresPerWorker;
  const memory = c.primaryBytes + workers * c.workerBytes + conns * (c.gatewayBytesPerConn + c.kernelBytesPerSocket);
  const files = Math.ceil(conns / workers) + FILES_PER_WORKER;
  return { conns, workers, cores, memory, files };
}

/** The fewest instances of `s` that hold `w` within `s.utilisation` of every resource, and the NATS cluster behind them. */
export function plan(c: Costs, w: Workload, s: Shape): Plan {
  if (w.connections < 1 || w.fanout < 0 || w.publishRate < 0) throw new RangeError("connections must be at least 1, fan-out and publish rate at least 0");
  if (w.fanout > w.connections) throw new RangeError(`fan-out ${w.fanout} is more than the ${w.connections} connections`);
  const cpuRoom = s.coresPerInstance * s.utilisation;
  const memRoom = s.memoryBytesPerInstance * s.utilisation;
  const fits = (n: number): boolean => {
    const p = perInstance(c, w, s, n);
    return p.cores <= cpuRoom && p.memory <= memRoom && p.files <= s.fdLimit;
  };
  // Each resource's need per instance falls as instances are added: double, then bisect to the fewest that fit.
  let hi = 1;
  while (!fits(hi)) {
    if (hi >= MAX_INSTANCES) throw new RangeError(`no plan with up to ${MAX_INSTANCES} instances: one instance's fixed cost (idle workers) exceeds its share`);
    hi *= 2;
  }
  let lo = Math.floor(hi / 2) + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (fits(mid)) hi = mid;
    else lo = mid + 1;
  }
  const n = hi;
  const p = perInstance(c, w, s, n);
  const use: [Resource, number][] = [
    ["CPU", p.cores / s.coresPerInstance],
    ["memory", p.memory / s.memoryBytesPerInstance],
    ["file descriptors", p.files / s.fdLimit],
  ];
  const nats = natsPlan(c, w, s, n * p.workers);
  const first = nats.leaderOverloaded ? "NATS throughput" : use.reduce((a, b) => (b[1] > a[1] ? b : a))[0];
  return {
    instances: n,
    workersPerInstance: p.workers,
    connectionsPerInstance: p.conns,
    deliveriesPerSecond: w.publishRate * w.fanout,
    cpu: { cores: p.cores, of: s.coresPerInstance },
    memory: { bytes: p.memory, of: s.memoryBytesPerInstance },
    files: { perProcess: p.files, of: s.fdLimit },
    first,
    totalCores: n * s.coresPerInstance,
    totalMemoryBytes: n * s.memoryBytesPerInstance,
    egressBytesPerSecond: w.publishRate * w.fanout * (w.payloadBytes + FRAME_OVERHEAD_BYTES),
    nats,
  };
}

/**
 * NATS: each publish is stored by the stream's leader and copied to `replicas − 1` followers; each message is
 * also sent to every worker holding a subscriber of its channel (at most one per subscriber, at most every
 * worker) over the workers' core subscriptions, which any server of the cluster serves. The leader's share is
 * the one a cluster cannot spread: past one server's cores, the channels need more streams (namespaces).
 */
export function natsPlan(c: Costs, w: Workload, s: Shape, workers: number): Plan["nats"] {
  const workerDeliveries = w.publishRate * Math.min(w.fanout, workers);
  const cores = (w.publishRate * c.natsUsPerPublish * s.replicas + workerDeliveries * c.natsUsPerWorkerDelivery) / 1e6;
  const leaderCores = (w.publishRate * c.natsUsPerPublish) / 1e6;
  const room = s.natsCoresPerServer * s.utilisation;
  const needed = Math.max(s.replicas >= 3 ? 3 : 1, Math.ceil(cores / room));
  return {
    servers: needed % 2 === 0 && needed > 1 ? needed + 1 : needed,
    cores,
    leaderCores,
    leaderOverloaded: leaderCores > room,
    workerDeliveriesPerSecond: workerDeliveries,
  };
}

/** What this machine's bench:million should measure at `clients` sockets (the validation's prediction). */
export type BenchPrediction = { clients: number; workers: number; gatewayRssMB: number; kernelMB: number; steadyCpuPct: number };

/** The million bench on this machine: `workers` workers, every socket's both ends here, `rate` messages a second to all. */
export function predictBench(c: Costs, clients: number, workers: number, rate: number): BenchPrediction {
  return {
    clients,
    workers,
    gatewayRssMB: (c.primaryBytes + workers * c.workerBytes + clients * c.gatewayBytesPerConn) / 1048576,
    kernelMB: (2 * clients * c.kernelBytesPerSocket) / 1048576,
    steadyCpuPct: (workers * c.idleCoresPerWorker + (rate * clients * c.usPerDelivery) / 1e6) * 100,
  };
}
