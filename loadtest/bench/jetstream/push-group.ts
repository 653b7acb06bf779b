// Seed 001: a durable push consumer shared by 5 subscribers through a deliver group, explicit acks, at most
// 10 unacknowledged (max-pending 10), flow control and a 1-minute heartbeat, fed by 5 or 1 synchronous
// publishers of 1 KB. natscli v0.5.1's bench has no push mode any more, so its row consumes through a durable
// pull consumer with the same limits (`nats bench js consume --batch 10`); the nats.js row consumes the users'
// push consumer itself.
import { parseBench, runNats, startNats, type CliProc } from "./natscli.js";
import { errText, freshStreams, nodeFor, portOf, printed, removeStreams, track, type Context } from "./context.js";
import { runPubCluster, startNodeJob } from "./node-path.js";
import { nodeLines, ratesFromAggregate, ratesFromBench, ratesFromNode, type Path, type Rates, type Row } from "./rows.js";

const STREAM = "sap";
const SUBJECT = "kyma.sap.kyma.custom.natsbenchmark.execution.created.v1";
const SUBS = 5;
const SIZE = 1024;

/** The users' consumer, as they created it (seed 001), for the push row. */
export function pushConsumerArgs(name: string): string[] {
  return [
    "consumer",
    "add",
    STREAM,
    name,
    "--deliver-group",
    `${name}-GROUP`,
    "--target",
    `${name}-DELIVERY`,
    "--filter",
    SUBJECT,
    "--deliver",
    "new",
    "--ack",
    "explicit",
    "--replay",
    "instant",
    "--max-deliver",
    "100",
    "--max-pending",
    "10",
    "--flow-control",
    "--heartbeat",
    "1m",
    "--wait",
    "30s",
    "--defaults",
  ];
}

/** The pull twin for nats bench: same filter, acks, redelivery and max-pending 10. */
function pullConsumerArgs(name: string): string[] {
  return [
    "consumer",
    "add",
    STREAM,
    name,
    "--pull",
    "--filter",
    SUBJECT,
    "--deliver",
    "new",
    "--ack",
    "explicit",
    "--replay",
    "instant",
    "--max-deliver",
    "100",
    "--max-pending",
    "10",
    "--wait",
    "30s",
    "--defaults",
  ];
}

function row(ctx: Context, pubs: number, path: Path, config: string, commands: string[], pub?: Rates, sub?: Rates, lines: string[] = [], error?: string): Row {
  return {
    workload: `001.push-group-${pubs}`,
    seed: "001",
    target: ctx.servers.target,
    path,
    config,
    commands,
    ...(pub ? { pub } : {}),
    ...(sub ? { sub } : {}),
    ...(pub && sub ? { value: pub.aggregate + sub.aggregate } : {}),
    metric: "Pub/Sub msgs/s (pub + sub aggregate, as nats bench printed it)",
    status: error ? "failed" : "ok",
    ...(error ? { note: error } : {}),
    lines,
    round: 0,
  };
}

async function viaNatsBench(ctx: Context, pubs: number, msgs: number, replicas: number, timeoutMs: number): Promise<Row> {
  const config = `${pubs} sync pub / ${SUBS} sub on durable pull consumer (max-pending 10, batch 10), ${msgs.toLocaleString("en-US")} msgs of 1 KB, R${replicas} file`;
  const commands = await freshStreams(ctx, [{ name: STREAM, subjects: ["kyma.>"], storage: "file", replicas }]);
  const procs: CliProc[] = [];
  try {
    const cargs = pullConsumerArgs("test-consumer");
    await runNats(cargs, ctx.servers.servers);
    commands.push(`nats ${cargs.join(" ")}`);
    const subArgs = [
      "bench",
      "js",
      "consume",
      "--stream",
      STREAM,
      "--consumer",
      "test-consumer",
      "--batch",
      "10",
      "--acks",
      "explicit",
      "--clients",
      String(SUBS),
      "--msgs",
      String(msgs),
      "--no-progress",
    ];
    const pubArgs = [
      "bench",
      "js",
      "pub",
      "sync",
      SUBJECT,
      "--stream",
      STREAM,
      "--clients",
      String(pubs),
      "--msgs",
      String(msgs),
      "--size",
      String(SIZE),
      "--no-progress",
    ];
    commands.push(`nats ${subArgs.join(" ")}`, `nats ${pubArgs.join(" ")}`);
    const sub = track(procs, startNats(subArgs, nodeFor(ctx, 0), timeoutMs));
    await printed(sub, /\] Starting JetStream durable consumer/, SUBS, 15_000);
    const pub = track(procs, startNats(pubArgs, nodeFor(ctx, 1), timeoutMs));
    const [po, so] = await Promise.all([pub.done, sub.done]);
    for (const o of [po, so])
      if (o.code !== 0) throw new Error(o.timedOut ? `timed out after ${timeoutMs} ms` : `nats bench exited ${o.code}: ${o.stderr.trim().slice(-300)}`);
    const pb = parseBench(po.stdout);
    const sb = parseBench(so.stdout);
    return row(ctx, pubs, "nats bench", config, commands, ratesFromBench([pb]), ratesFromBench([sb]), [...pb.lines, ...sb.lines]);
  } catch (e) {
    return row(ctx, pubs, "nats bench", config, commands, undefined, undefined, [], errText(e));
  } finally {
    procs.forEach((p) => p.kill());
    await removeStreams(ctx, [STREAM]);
  }
}

async function viaNode(ctx: Context, pubs: number, msgs: number, replicas: number, timeoutMs: number): Promise<Row> {
  const perPub = Math.ceil(msgs / pubs);
  const config = `${pubs} sync pub / ${SUBS} sub in the deliver group of the users' push consumer (max-pending 10, flow control, heartbeat 1m), ${(perPub * pubs).toLocaleString("en-US")} msgs of 1 KB, R${replicas} file`;
  const commands = await freshStreams(ctx, [{ name: STREAM, subjects: ["kyma.>"], storage: "file", replicas }]);
  let consumer: ReturnType<typeof startNodeJob> | undefined;
  try {
    const cargs = pushConsumerArgs("test-consumer");
    await runNats(cargs, ctx.servers.servers);
    commands.push(`nats ${cargs.join(" ")}`);
    // pub-cluster adds an end marker per publisher process.
    const expect = perPub * pubs + pubs;
    consumer = startNodeJob({ kind: "push-group", servers: nodeFor(ctx, 0), timeoutMs, stream: STREAM, consumer: "test-consumer", clients: SUBS, expect });
    await consumer.ready;
    commands.push(`(nats.js) ${SUBS} subscriptions to the push consumer's deliver group, explicit ack each`);
    const args = [
      "--target",
      "jetstream",
      "-H",
      "127.0.0.1",
      "--port",
      String(portOf(nodeFor(ctx, 1))),
      "-c",
      String(pubs),
      "-t",
      "0",
      "-n",
      String(perPub),
      "-p",
      "1",
      "--size",
      String(SIZE),
      "--channel",
      SUBJECT,
      "--subject-prefix",
      "",
      "--sync",
    ];
    const p = await runPubCluster(args, timeoutMs);
    commands.push(p.command);
    const r = await consumer.result;
    if (r.timedOut) throw new Error(`consumers timed out with ${r.rates.received} of ${expect} messages`);
    const pub = ratesFromAggregate(p.result.ratePerS, pubs);
    const sub = ratesFromNode([r.rates]);
    const out = row(ctx, pubs, "nats.js", config, commands, pub, sub, [
      ...nodeLines("pub-cluster --target jetstream --sync", pub),
      ...nodeLines("nats.js push consumer, deliver group", sub),
    ]);
    out.toolCpuPct = Math.max(p.cpuPct, r.cpuPct);
    return out;
  } catch (e) {
    consumer?.kill();
    return row(ctx, pubs, "nats.js", config, commands, undefined, undefined, [], errText(e));
  } finally {
    await removeStreams(ctx, [STREAM]);
  }
}

export async function runPushGroup(ctx: Context): Promise<void> {
  const replicas = ctx.servers.maxReplicas;
  const msgs = ctx.opts.counts.pushGroup;
  const timeoutMs = ctx.opts.quick ? 60_000 : 300_000;
  // --quick: the 5-publisher case only (the 1-publisher one runs the same code).
  for (const pubs of ctx.opts.quick ? [5] : [5, 1]) {
    ctx.log(`[001] push consumer with deliver group: ${pubs} pub / ${SUBS} sub`);
    ctx.add(await viaNatsBench(ctx, pubs, msgs, replicas, timeoutMs));
    ctx.add(await viaNode(ctx, pubs, msgs, replicas, timeoutMs));
  }
}
