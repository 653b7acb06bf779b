// Seed 002: 1 publisher and 2 subscribers sharing a durable consumer with explicit acks, --dedup, 128 B
// messages, file storage, R3 and R1; the same with 1–64 subscribers; KV put and KV watch. The users' old
// `nats bench --push` made a durable push consumer with a deliver group; v0.5.1 has no push mode, so nats bench
// consumes through its durable pull consumer (`js consume`) and the nats.js rows through the push consumer.
import { readFileSync } from "node:fs";
import { parseBench, runNats, startNats, type CliProc } from "./natscli.js";
import { errText, freshStreams, nodeFor, portOf, printed, removeStreams, track, type Context } from "./context.js";
import { runPubCluster, startNodeJob } from "./node-path.js";
import { latencyFromBench, latencyFromNode, nodeLines, ratesFromAggregate, ratesFromBench, ratesFromNode, type Path, type Rates, type Row } from "./rows.js";
import { ASYNC_BATCH } from "./matrix.js";
import { waitFor } from "#testkit/wait.js";

const STREAM = "benchstream";
const SUBJECT = "TestReplicatedStream";
const SIZE = 128;
const BUCKET = "BenchKeyValueBucket";
export const SCALING = [1, 2, 4, 8, 16, 32, 64] as const;

type Spec = { workload: string; subs: number; replicas: number; msgs: number };

function row(
  ctx: Context,
  s: Spec,
  path: Path,
  config: string,
  commands: string[],
  parts: { pub?: Rates; sub?: Rates; lines?: string[]; error?: string },
): Row {
  return {
    workload: s.workload,
    seed: "002",
    target: ctx.servers.target,
    path,
    config,
    commands,
    ...(parts.pub ? { pub: parts.pub } : {}),
    ...(parts.sub ? { sub: parts.sub, value: parts.sub.aggregate } : {}),
    metric: "sub msgs/s (aggregate over subscribers)",
    status: parts.error ? "failed" : "ok",
    ...(parts.error ? { note: parts.error } : {}),
    lines: parts.lines ?? [],
    round: 0,
  };
}

const describe = (s: Spec, how: string): string =>
  `1 async pub (batch ${ASYNC_BATCH}, dedup) / ${s.subs} sub ${how}, ${s.msgs.toLocaleString("en-US")} msgs of 128 B, R${s.replicas} file`;

const streamSpec = (replicas: number) => ({ name: STREAM, subjects: [SUBJECT], storage: "file" as const, replicas, dupeWindow: "2m" });

async function dedupViaNatsBench(ctx: Context, s: Spec, timeoutMs: number): Promise<Row> {
  const config = describe(s, "on the bench's durable pull consumer, explicit ack");
  const commands = await freshStreams(ctx, [streamSpec(s.replicas)]);
  const procs: CliProc[] = [];
  try {
    const subArgs = [
      "bench",
      "js",
      "consume",
      "--stream",
      STREAM,
      "--acks",
      "explicit",
      "--clients",
      String(s.subs),
      "--msgs",
      String(s.msgs),
      "--no-progress",
    ];
    const pubArgs = [
      "bench",
      "js",
      "pub",
      "async",
      SUBJECT,
      "--stream",
      STREAM,
      "--dedup",
      "--batch",
      String(ASYNC_BATCH),
      "--clients",
      "1",
      "--msgs",
      String(s.msgs),
      "--size",
      String(SIZE),
      "--no-progress",
    ];
    commands.push(`nats ${subArgs.join(" ")}`, `nats ${pubArgs.join(" ")}`);
    const sub = track(procs, startNats(subArgs, nodeFor(ctx, 0), timeoutMs));
    await printed(sub, /\] Starting JetStream durable consumer/, s.subs, 30_000);
    const pub = track(procs, startNats(pubArgs, nodeFor(ctx, 1), timeoutMs));
    const [po, so] = await Promise.all([pub.done, sub.done]);
    for (const o of [po, so])
      if (o.code !== 0) throw new Error(o.timedOut ? `timed out after ${timeoutMs} ms` : `nats bench exited ${o.code}: ${o.stderr.trim().slice(-300)}`);
    const pb = parseBench(po.stdout);
    const sb = parseBench(so.stdout);
    return row(ctx, s, "nats bench", config, commands, { pub: ratesFromBench([pb]), sub: ratesFromBench([sb]), lines: [...pb.lines, ...sb.lines.slice(-2)] });
  } catch (e) {
    return row(ctx, s, "nats bench", config, commands, { error: errText(e) });
  } finally {
    procs.forEach((p) => p.kill());
    await removeStreams(ctx, [STREAM]);
  }
}

async function dedupViaNode(ctx: Context, s: Spec, timeoutMs: number): Promise<Row> {
  const config = describe(s, "in the deliver group of a durable push consumer, explicit ack");
  const commands = await freshStreams(ctx, [streamSpec(s.replicas)]);
  let consumer: ReturnType<typeof startNodeJob> | undefined;
  try {
    const cargs = [
      "consumer",
      "add",
      STREAM,
      "natscli-bench",
      "--target",
      "natscli-bench.deliver",
      "--deliver-group",
      "natscli-bench",
      "--deliver",
      "all",
      "--ack",
      "explicit",
      "--replay",
      "instant",
      "--defaults",
    ];
    await runNats(cargs, ctx.servers.servers);
    commands.push(`nats ${cargs.join(" ")}`);
    const expect = s.msgs + 1;
    consumer = startNodeJob({ kind: "push-group", servers: nodeFor(ctx, 0), timeoutMs, stream: STREAM, consumer: "natscli-bench", clients: s.subs, expect });
    await consumer.ready;
    commands.push(`(nats.js) ${s.subs} subscriptions to the push consumer's deliver group, explicit ack each`);
    const args = [
      "--target",
      "jetstream",
      "-H",
      "127.0.0.1",
      "--port",
      String(portOf(nodeFor(ctx, 1))),
      "-c",
      "1",
      "-t",
      "0",
      "-n",
      String(s.msgs),
      "-p",
      "1",
      "--size",
      String(SIZE),
      "--channel",
      SUBJECT,
      "--subject-prefix",
      "",
      "--msg-id",
      "--window",
      String(ASYNC_BATCH),
    ];
    const p = await runPubCluster(args, timeoutMs);
    commands.push(p.command);
    const r = await consumer.result;
    if (r.timedOut) throw new Error(`consumers timed out with ${r.rates.received} of ${expect} messages`);
    const pub = ratesFromAggregate(p.result.ratePerS, 1);
    const sub = ratesFromNode([r.rates]);
    const out = row(ctx, s, "nats.js", config, commands, {
      pub,
      sub,
      lines: [...nodeLines("pub-cluster --target jetstream --msg-id", pub), ...nodeLines("nats.js push consumer, deliver group", sub)],
    });
    out.toolCpuPct = Math.max(p.cpuPct, r.cpuPct);
    return out;
  } catch (e) {
    consumer?.kill();
    return row(ctx, s, "nats.js", config, commands, { error: errText(e) });
  } finally {
    await removeStreams(ctx, [STREAM]);
  }
}

function kvRow(
  ctx: Context,
  workload: string,
  path: Path,
  config: string,
  commands: string[],
  parts: { value?: number; metric: string; pub?: Rates; sub?: Rates; rssMb?: number; lines?: string[]; error?: string; latency?: Row["latency"] },
): Row {
  return {
    workload,
    seed: "002",
    target: ctx.servers.target,
    path,
    config,
    commands,
    ...(parts.pub ? { pub: parts.pub } : {}),
    ...(parts.sub ? { sub: parts.sub } : {}),
    ...(parts.latency ? { latency: parts.latency } : {}),
    ...(parts.value !== undefined ? { value: parts.value } : {}),
    ...(parts.rssMb !== undefined ? { rssMb: parts.rssMb } : {}),
    metric: parts.metric,
    status: parts.error ? "failed" : "ok",
    ...(parts.error ? { note: parts.error } : {}),
    lines: parts.lines ?? [],
    round: 0,
  };
}

async function freshBucket(ctx: Context, replicas: number): Promise<string> {
  await runNats(["kv", "rm", BUCKET, "-f"], ctx.servers.servers).catch(() => undefined);
  const args = ["kv", "add", BUCKET, "--replicas", String(replicas), "--storage", "file"];
  await runNats(args, ctx.servers.servers);
  return `nats ${args.join(" ")}`;
}

const kvPutArgs = (msgs: number): string[] => [
  "bench",
  "kv",
  "put",
  "--bucket",
  BUCKET,
  "--clients",
  "1",
  "--msgs",
  String(msgs),
  "--size",
  String(SIZE),
  "--no-progress",
];

/** Peak resident memory of a process (VmHWM), in MB. */
function peakRssMb(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

async function kvPut(ctx: Context, replicas: number, msgs: number, timeoutMs: number): Promise<void> {
  const config = `1 putter, ${msgs.toLocaleString("en-US")} keys of 128 B, R${replicas} file`;
  for (const path of ["nats bench", "nats.js"] as const) {
    const commands = [await freshBucket(ctx, replicas)];
    try {
      if (path === "nats bench") {
        const args = kvPutArgs(msgs);
        commands.push(`nats ${args.join(" ")}`);
        const o = await runNats(args, nodeFor(ctx, 1), timeoutMs);
        const b = parseBench(o.stdout);
        ctx.add(
          kvRow(ctx, "002.kv-put", path, config, commands, {
            value: b.aggregate,
            metric: "KV puts/s",
            pub: ratesFromBench([b]),
            ...(b.latencyUs ? { latency: latencyFromBench(b.latencyUs) } : {}),
            lines: b.lines,
          }),
        );
      } else {
        commands.push(
          `(nats.js) one connection, js.publish("$KV.${BUCKET}.<i>") awaited one at a time: what a KV put is (@nats-io/kv is not a dependency here)`,
        );
        const j = startNodeJob({ kind: "kv-put", servers: nodeFor(ctx, 1), timeoutMs, bucket: BUCKET, count: msgs, size: SIZE });
        const r = await j.result;
        if (r.timedOut) throw new Error(`timed out after ${r.rates.received} puts`);
        const pub = ratesFromNode([r.rates]);
        const latency = latencyFromNode(r.latency!);
        ctx.add(
          kvRow(ctx, "002.kv-put", path, config, commands, {
            value: pub.aggregate,
            metric: "KV puts/s",
            pub,
            latency,
            lines: nodeLines("nats.js KV put", pub, latency),
          }),
        );
      }
    } catch (e) {
      ctx.add(kvRow(ctx, "002.kv-put", path, config, commands, { metric: "KV puts/s", error: errText(e) }));
    }
  }
}

/**
 * One watcher while nats bench puts `msgs` keys: the users' `nats kv watch` (lines counted as it prints them)
 * or a nats.js watcher. The figure is the rate at which the watcher saw the puts; its peak memory beside it.
 */
async function kvWatch(ctx: Context, replicas: number, msgs: number, timeoutMs: number): Promise<void> {
  const config = `1 watcher while 1 putter (nats bench) puts ${msgs.toLocaleString("en-US")} keys of 128 B, R${replicas} file`;
  for (const path of ["nats CLI", "nats.js"] as const) {
    const commands = [await freshBucket(ctx, replicas)];
    const procs: CliProc[] = [];
    let job: ReturnType<typeof startNodeJob> | undefined;
    try {
      const putArgs = kvPutArgs(msgs);
      if (path === "nats CLI") {
        const wargs = ["kv", "watch", BUCKET];
        commands.push(`nats ${wargs.join(" ")}`, `nats ${putArgs.join(" ")}`);
        const w = track(procs, startNats(wargs, nodeFor(ctx, 0), timeoutMs));
        // The watch prints nothing for an empty bucket: a sentinel key shows it is live.
        await runNats(["kv", "put", BUCKET, "ready", "1"], ctx.servers.servers);
        await printed(w, /PUT \S+ > ready/, 1, 15_000);
        const t: number[] = [];
        let seen = 0;
        w.child.stdout!.on("data", (d: Buffer) => {
          const n = d.toString().match(/ PUT /g)?.length ?? 0;
          if (n) {
            seen += n;
            t.push(performance.now());
          }
        });
        const put = await runNats(putArgs, nodeFor(ctx, 1), timeoutMs);
        await waitFor(() => seen >= msgs || undefined, { timeoutMs, what: `nats kv watch printing ${msgs} puts` });
        const rss = peakRssMb(w.child.pid!);
        w.kill();
        const rate = t.length > 1 ? (seen - 1) / ((t[t.length - 1]! - t[0]!) / 1000) : NaN;
        const b = parseBench(put.stdout);
        const sub: Rates = { clients: 1, min: rate, avg: rate, max: rate, aggregate: rate };
        ctx.add(
          kvRow(ctx, "002.kv-watch", path, config, commands, {
            value: rate,
            metric: "updates/s seen by the watcher",
            pub: ratesFromBench([b]),
            sub,
            rssMb: rss,
            lines: [...b.lines, `nats kv watch: ${Math.round(rate).toLocaleString("en-US")} updates/sec printed, peak RSS ${rss.toFixed(0)} MB`],
          }),
        );
      } else {
        commands.push(
          `(nats.js) ordered consumer on KV_${BUCKET}, filter $KV.${BUCKET}.>, last value per key then updates: what a KV watch is`,
          `nats ${putArgs.join(" ")}`,
        );
        const j = (job = startNodeJob({ kind: "kv-watch", servers: nodeFor(ctx, 0), timeoutMs, bucket: BUCKET, expect: msgs }));
        await j.ready;
        const put = await runNats(putArgs, nodeFor(ctx, 1), timeoutMs);
        const r = await j.result;
        if (r.timedOut) throw new Error(`watcher timed out with ${r.rates.received} of ${msgs} updates`);
        const b = parseBench(put.stdout);
        const sub = ratesFromNode([r.rates]);
        const rss = r.maxRssKb / 1024;
        ctx.add(
          kvRow(ctx, "002.kv-watch", path, config, commands, {
            value: sub.aggregate,
            metric: "updates/s seen by the watcher",
            pub: ratesFromBench([b]),
            sub,
            rssMb: rss,
            lines: [...b.lines, `nats.js watcher: ${Math.round(sub.aggregate).toLocaleString("en-US")} updates/sec, peak RSS ${rss.toFixed(0)} MB`],
          }),
        );
      }
    } catch (e) {
      job?.kill();
      ctx.add(kvRow(ctx, "002.kv-watch", path, config, commands, { metric: "updates/s seen by the watcher", error: errText(e) }));
    } finally {
      procs.forEach((p) => p.kill());
    }
  }
  await runNats(["kv", "rm", BUCKET, "-f"], ctx.servers.servers).catch(() => undefined);
}

export async function runClusterSeed(ctx: Context): Promise<void> {
  const { counts, quick } = ctx.opts;
  const timeoutMs = quick ? 60_000 : 300_000;
  const max = ctx.servers.maxReplicas;
  // --quick: the nats.js rows once (the highest replica count) and three scaling steps.
  for (const replicas of [3, 1].filter((r) => r <= max)) {
    const s: Spec = { workload: `002.dedup-r${replicas}`, subs: 2, replicas, msgs: counts.dedup };
    ctx.log(`[002] ${describe(s, "on one durable")}`);
    ctx.add(await dedupViaNatsBench(ctx, s, timeoutMs));
    if (!quick || replicas === max) ctx.add(await dedupViaNode(ctx, s, timeoutMs));
  }
  for (const subs of quick ? [1, 8, 64] : SCALING) {
    const s: Spec = { workload: `002.scale-${subs}`, subs, replicas: max, msgs: counts.scaling };
    ctx.log(`[002] consumer scaling: ${describe(s, "on one durable")}`);
    ctx.add(await dedupViaNatsBench(ctx, s, timeoutMs));
    if (!quick) ctx.add(await dedupViaNode(ctx, s, timeoutMs));
  }
  ctx.log(`[002] KV put and watch, R${max}`);
  await kvPut(ctx, max, counts.kv, timeoutMs);
  await kvWatch(ctx, max, counts.kv, timeoutMs);
}
