// `npm run capacity -- model --connections N --channels C --publish-rate R --fanout F [--payload B]`: the
// instances, cores and memory a workload needs and the resource that runs out first, from the newest bench
// results (costs.ts); `npm run capacity -- validate` checks the model against bench:million (validate.ts).
import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { readCosts } from "./costs.js";
import { plan, type Plan, type Shape, type Workload } from "./model.js";
import { runValidation } from "./validate.js";

const ROOT = resolve(import.meta.dirname, "../../..");
const RESULTS = resolve(ROOT, "loadtest/results");
const GiB = 2 ** 30;

const USAGE = `usage: npm run capacity -- model --connections N --channels C --publish-rate R --fanout F [--payload B]
         [--cores-per-instance 16] [--memory-per-instance 32] (GiB) [--fd-limit 1048576] [--utilisation 0.7]
         [--nats-cores 8] [--replicas 3] [--json]
       npm run capacity -- validate [--points 10000,100000] [--steady 60] [--ramp conns-per-s] [--keep-as-million]`;

const f = (n: number, d = 0): string => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const pct = (a: number, b: number): string => `${f((a / b) * 100)} %`;

function num(values: Record<string, string | boolean | undefined>, name: string, def?: number): number {
  const raw = values[name];
  if (raw === undefined) {
    if (def === undefined) throw new Error(`--${name} is required\n${USAGE}`);
    return def;
  }
  const n = Number(String(raw).replace(/_/g, ""));
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a number >= 0, not ${JSON.stringify(raw)}`);
  return n;
}

/** The plan as the lines `model` prints. */
export function planLines(w: Workload, s: Shape, p: Plan, sources: { file: string; at: string; what: string }[]): string[] {
  const n = p.nats;
  return [
    `Workload: ${f(w.connections)} connections, ${f(w.channels)} channels, ${f(w.publishRate)} messages/s published, fan-out ${f(w.fanout)} ` +
      `→ ${f(p.deliveriesPerSecond)} deliveries/s of ${f(w.payloadBytes)}-byte payloads (${f((p.egressBytesPerSecond * 8) / 1e9, 2)} Gbit/s to sockets)`,
    `Costs from: ${sources.map((x) => `${x.file} (${x.what}, ${x.at.slice(0, 10)})`).join("; ")}`,
    "",
    `Gateway: ${f(p.instances)} instance(s) of ${f(s.coresPerInstance)} cores and ${f(s.memoryBytesPerInstance / GiB)} GiB (${f(p.instances * s.coresPerInstance)} cores, ` +
      `${f((p.instances * s.memoryBytesPerInstance) / GiB)} GiB in all), ${f(p.workersPerInstance)} workers and ${f(p.connectionsPerInstance)} connections each; ` +
      `at most ${f(s.utilisation * 100)} % of any resource`,
    `  CPU               ${f(p.cpu.cores, 2)} of ${f(p.cpu.of)} cores (${pct(p.cpu.cores, p.cpu.of)})`,
    `  memory            ${f(p.memory.bytes / GiB, 2)} of ${f(p.memory.of / GiB)} GiB (${pct(p.memory.bytes, p.memory.of)}; gateway and kernel per connection, idle workers)`,
    `  file descriptors  ${f(p.files.perProcess)} of ${f(p.files.of)} per worker process (${pct(p.files.perProcess, p.files.of)})`,
    `NATS: ${f(n.servers)} server(s) of ${f(s.natsCoresPerServer)} cores, R${s.replicas}: ${f(n.cores, 2)} cores in all, the stream leader ${f(n.leaderCores, 2)}; ` +
      `${f(n.workerDeliveriesPerSecond)} messages/s to gateway workers` +
      (n.leaderOverloaded ? ` — one stream's leader needs more than a server: split the channels over several streams (namespaces)` : ""),
    `Runs out first: ${p.first}`,
  ];
}

async function model(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: Object.fromEntries(
      [
        "connections",
        "channels",
        "publish-rate",
        "fanout",
        "payload",
        "cores-per-instance",
        "memory-per-instance",
        "fd-limit",
        "utilisation",
        "nats-cores",
        "replicas",
      ]
        .map((k) => [k, { type: "string" as const }] as [string, { type: "string" | "boolean" }])
        .concat([["json", { type: "boolean" }]]),
    ),
    allowPositionals: false,
  });
  const all = { ...values } as Record<string, string | boolean | undefined>;
  const json = all.json === true;
  delete all.json;
  const w: Workload = {
    connections: num(all, "connections"),
    channels: num(all, "channels"),
    publishRate: num(all, "publish-rate"),
    fanout: num(all, "fanout"),
    payloadBytes: num(all, "payload", 100),
  };
  const s: Shape = {
    coresPerInstance: num(all, "cores-per-instance", 16),
    memoryBytesPerInstance: num(all, "memory-per-instance", 32) * GiB,
    fdLimit: num(all, "fd-limit", 1_048_576),
    utilisation: num(all, "utilisation", 0.7),
    natsCoresPerServer: num(all, "nats-cores", 8),
    replicas: num(all, "replicas", 3),
  };
  const read = readCosts(RESULTS, ROOT);
  if ("missing" in read) {
    process.stderr.write(`capacity model: figures missing from loadtest/results/:\n${read.missing.map((m) => `  - ${m}`).join("\n")}\n`);
    process.exit(3);
  }
  const p = plan(read.costs, w, s);
  if (json) console.log(JSON.stringify({ workload: w, shape: s, costs: read.costs, sources: read.sources, plan: p }));
  else console.log(planLines(w, s, p, read.sources).join("\n"));
}

const [cmd, ...rest] = process.argv.slice(2);
try {
  if (cmd === "model") await model(rest);
  else if (cmd === "validate") process.exitCode = await runValidation(rest, { root: ROOT, results: RESULTS });
  else {
    process.stderr.write(`${USAGE}\n`);
    process.exitCode = 2;
  }
} catch (e) {
  process.stderr.write(`capacity ${cmd}: ${(e as Error).message}\n`);
  process.exitCode = 2;
}
