// Publish paths: the same publishes (1 KB, 2 publishers, sequential and pipelined) into one stream — the one
// the gateway creates, file storage, the target's highest replica count — through nats bench, through nats.js
// (pub-cluster --target jetstream) and through the gateway's HTTP publish (pub-cluster --target gateway-http),
// so the cost of the Node client and of the gateway shows next to the Go tool's.
import { parseBench, startNats } from "./natscli.js";
import { errText, nodeFor, portOf, type Context } from "./context.js";
import { runPubCluster } from "./node-path.js";
import { startGatewayOn, type GatewayRun } from "./servers.js";
import { cpuWindow } from "./cpu.js";
import { ASYNC_BATCH } from "./matrix.js";
import { latencyFromBench, nodeLines, ratesFromAggregate, ratesFromBench, type Latency, type Path, type Rates, type Row } from "./rows.js";

const STREAM = "PATHS";
const PREFIX = "paths";
const CHANNEL = "bench.one";
const PUBS = 2;
const SIZE = 1024;

type Mode = "sequential" | "pipelined";

function row(
  ctx: Context,
  mode: Mode,
  path: Path,
  config: string,
  commands: string[],
  parts: { pub?: Rates; latency?: Latency; lines?: string[]; error?: string },
): Row {
  return {
    workload: `paths.${mode}`,
    seed: "paths",
    target: ctx.servers.target,
    path,
    config,
    commands,
    ...(parts.pub ? { pub: parts.pub, value: parts.pub.aggregate } : {}),
    ...(parts.latency ? { latency: parts.latency } : {}),
    metric: "published msgs/s (aggregate over publishers)",
    status: parts.error ? "failed" : "ok",
    ...(parts.error ? { note: parts.error } : {}),
    lines: parts.lines ?? [],
    round: 0,
  };
}

async function natsBench(ctx: Context, mode: Mode, msgs: number, config: string, timeoutMs: number): Promise<Row> {
  const args = [
    "bench",
    "js",
    "pub",
    mode === "sequential" ? "sync" : "async",
    `${PREFIX}.${CHANNEL}`,
    "--stream",
    STREAM,
    "--clients",
    String(PUBS),
    "--msgs",
    String(msgs),
    "--size",
    String(SIZE),
    "--no-progress",
    ...(mode === "pipelined" ? ["--batch", String(ASYNC_BATCH)] : []),
  ];
  const commands = [`nats ${args.join(" ")}`];
  try {
    const o = await startNats(args, nodeFor(ctx, 1), timeoutMs).done;
    if (o.code !== 0) throw new Error(o.timedOut ? `timed out after ${timeoutMs} ms` : `exited ${o.code}: ${o.stderr.trim().slice(-300)}`);
    const b = parseBench(o.stdout);
    // Pipelined: nats bench times each batch of 100, not each message.
    const latency = b.latencyUs && mode === "sequential" ? latencyFromBench(b.latencyUs) : undefined;
    return row(ctx, mode, "nats bench", config, commands, { pub: ratesFromBench([b]), ...(latency ? { latency } : {}), lines: b.lines });
  } catch (e) {
    return row(ctx, mode, "nats bench", config, commands, { error: errText(e) });
  }
}

async function pubCluster(
  ctx: Context,
  mode: Mode,
  path: "nats.js" | "gateway HTTP",
  msgs: number,
  gw: GatewayRun,
  config: string,
  timeoutMs: number,
): Promise<Row> {
  const perPub = Math.ceil(msgs / PUBS);
  const target =
    path === "nats.js"
      ? ["--target", "jetstream", "--port", String(portOf(nodeFor(ctx, 1))), "--subject-prefix", `${PREFIX}.`]
      : ["--target", "gateway-http", "--port", String(gw.port)];
  const args = [
    ...target,
    "-H",
    "127.0.0.1",
    "-c",
    String(PUBS),
    "-t",
    "0",
    "-n",
    String(perPub),
    "-p",
    "1",
    "--size",
    String(SIZE),
    "--channel",
    CHANNEL,
    ...(mode === "sequential" ? ["--sync"] : ["--window", String(ASYNC_BATCH)]),
  ];
  const gwCpu = cpuWindow([gw.pid]);
  try {
    const p = await runPubCluster(args, timeoutMs);
    const gatewayCpuPct = gwCpu.read();
    const pub = ratesFromAggregate(p.result.ratePerS, PUBS);
    const a = p.ack;
    const latency: Latency = { avg: a.meanUs / 1000, min: a.min / 1000, max: a.max / 1000, p50: a.percentileUs(50) / 1000, p99: a.percentileUs(99) / 1000 };
    const out = row(ctx, mode, path, config, [p.command], {
      pub,
      latency,
      lines: nodeLines(`pub-cluster --target ${path === "nats.js" ? "jetstream" : "gateway-http"}`, pub, latency),
    });
    out.toolCpuPct = p.cpuPct;
    if (path === "gateway HTTP") out.gatewayCpuPct = gatewayCpuPct;
    return out;
  } catch (e) {
    return row(ctx, mode, path, config, [], { error: errText(e) });
  }
}

export async function runPaths(ctx: Context): Promise<void> {
  const replicas = ctx.servers.maxReplicas;
  const timeoutMs = ctx.opts.quick ? 60_000 : 300_000;
  ctx.log(`[paths] starting the gateway (1 worker) with stream ${STREAM} on ${PREFIX}.>, R${replicas} file`);
  const gw = await startGatewayOn(ctx.servers, { name: STREAM, prefix: PREFIX, replicas, storage: "file" });
  try {
    // --quick: sequential only (pipelined runs the same code with a window).
    for (const mode of ctx.opts.quick ? (["sequential"] as const) : (["sequential", "pipelined"] as const)) {
      const msgs = mode === "sequential" ? ctx.opts.counts.pathsSequential : ctx.opts.counts.pathsPipelined;
      const how = mode === "sequential" ? "each awaits its ack" : `${ASYNC_BATCH} in flight each`;
      const config = `${PUBS} publishers (${how}), ${msgs.toLocaleString("en-US")} msgs of 1 KB into the gateway's stream (R${replicas} file, republished for live delivery)`;
      ctx.log(`[paths] ${mode}: ${config}`);
      ctx.add(await natsBench(ctx, mode, msgs, config, timeoutMs));
      ctx.add(await pubCluster(ctx, mode, "nats.js", msgs, gw, config, timeoutMs));
      ctx.add(await pubCluster(ctx, mode, "gateway HTTP", msgs, gw, config, timeoutMs));
    }
  } finally {
    await gw.stop();
  }
}
