// Seed 000: the users' matrix — one stream for all vs one per app prefix, memory vs file, R1 vs R3, sync vs
// async publish, 10 KB / 1 KB / 512 B — as pods of 2 publishers and 10 ordered-consumer subscribers, each pod
// on its own subject. Every row runs with nats bench (v0.5.1) and with this project's clients (pub-cluster
// --target jetstream and nats.js ordered consumers), each on freshly created streams.
import { parseBench, startNats, type BenchOutput, type CliProc } from "./natscli.js";
import { errText, freshStreams, nodeFor, portOf, printed, removeStreams, track, type Context, type StreamSpec } from "./context.js";
import { startNodeJob } from "./node-path.js";
import { runPubCluster } from "./node-path.js";
import { nodeLines, ratesFromAggregate, ratesFromBench, ratesFromNode, ratesOverPods, type Path, type Rates, type Row } from "./rows.js";

export type MatrixSpec = {
  workload: string;
  layout: "one" | "app";
  pods: number;
  size: number;
  replicas: number;
  publish: "sync" | "async";
  storage: "file" | "memory";
  /** The users sent 10,000 messages per pod (10 KB, 1 KB) or 1,000,000 (512 B). */
  usersMsgs: 10_000 | 1_000_000;
  /** Also run through the Node path in --quick. */
  quickNode?: boolean;
};

export const PUBS_PER_POD = 2;
export const SUBS_PER_POD = 10;
/** The users' async runs used the old nats bench's default of 100 publishes per batch (pubbatch=100). */
export const ASYNC_BATCH = 100;

const spec = (
  workload: string,
  layout: "one" | "app",
  size: number,
  replicas: number,
  publish: "sync" | "async",
  pods: number,
  storage: "file" | "memory" = "file",
  quickNode = false,
): MatrixSpec => ({
  workload,
  layout,
  pods,
  size,
  replicas,
  publish,
  storage,
  usersMsgs: size === 512 ? 1_000_000 : 10_000,
  quickNode,
});

/** The matrix rows, in the order of the users' notes. */
export const MATRIX: readonly MatrixSpec[] = [
  spec("000.one-10k-r3-sync-3", "one", 10240, 3, "sync", 3, "file", true),
  spec("000.app-10k-r3-sync-3", "app", 10240, 3, "sync", 3),
  spec("000.one-10k-r3-sync-6", "one", 10240, 3, "sync", 6),
  spec("000.app-10k-r3-sync-6", "app", 10240, 3, "sync", 6),
  spec("000.one-10k-r3-async-3", "one", 10240, 3, "async", 3),
  spec("000.one-1k-r3-async-3", "one", 1024, 3, "async", 3),
  spec("000.one-1k-r3-sync-6-mem", "one", 1024, 3, "sync", 6, "memory"),
  spec("000.one-1k-r3-sync-6", "one", 1024, 3, "sync", 6),
  spec("000.one-1k-r1-sync-6", "one", 1024, 1, "sync", 6),
  spec("000.one-512-r3-async-6", "one", 512, 3, "async", 6),
  spec("000.one-512-r1-async-6", "one", 512, 1, "async", 6),
];

const sizeLabel = (b: number): string => (b >= 1024 ? `${b / 1024} KB` : `${b} B`);

/** The subject pod p publishes on, as in the users' commands (app1.bench1, app2.bench2, app3.bench3, app4.bench1, …). */
export function podSubject(layout: "one" | "app", p: number): string {
  const app = `app${p + 1}.bench${(p % 3) + 1}.subj.v1`;
  return layout === "one" ? `default.${app}` : app;
}

const podStream = (layout: "one" | "app", p: number): string => (layout === "one" ? "default" : `app${p + 1}`);

function streamsOf(s: MatrixSpec, pods: number, replicas: number): StreamSpec[] {
  if (s.layout === "one") return [{ name: "default", subjects: ["default.>"], storage: s.storage, replicas }];
  return Array.from({ length: pods }, (_, p) => ({ name: `app${p + 1}`, subjects: [`app${p + 1}.>`], storage: s.storage, replicas }));
}

/** A row as run on this target: pods and messages (scaled for --quick), replicas (at most the target's), its description. */
export type Effective = { pods: number; msgs: number; replicas: number; config: string };

export function effective(ctx: Context, s: MatrixSpec): Effective {
  const pods = Math.max(1, Math.round(s.pods / ctx.opts.counts.podDivisor));
  const msgs = s.usersMsgs === 10_000 ? ctx.opts.counts.matrix10k : ctx.opts.counts.matrix1m;
  const replicas = Math.min(s.replicas, ctx.servers.maxReplicas);
  const layout = s.layout === "one" ? "one stream default.>" : `one stream per app (${pods})`;
  const config =
    `${pods} × (${PUBS_PER_POD} pub + ${SUBS_PER_POD} sub), ${msgs.toLocaleString("en-US")} msgs/pod of ${sizeLabel(s.size)}, ` +
    `R${replicas}${replicas !== s.replicas ? ` (users R${s.replicas})` : ""}, ${s.storage}, ${s.publish} publish, ${layout}`;
  return { pods, msgs, replicas, config };
}

export function matrixRow(
  ctx: Context,
  s: MatrixSpec,
  e: Effective,
  path: Path,
  commands: string[],
  pub?: Rates,
  sub?: Rates,
  lines: string[] = [],
  error?: string,
): Row {
  return {
    workload: s.workload,
    seed: "000",
    target: ctx.servers.target,
    path,
    config: e.config,
    commands,
    ...(pub ? { pub } : {}),
    ...(sub ? { sub } : {}),
    ...(pub ? { value: pub.avg } : {}),
    metric: "pub msgs/s per publisher (avg)",
    status: error ? "failed" : "ok",
    ...(error ? { note: error } : {}),
    lines,
    round: 0,
  };
}

/** Runs the pods with nats bench: every pod's ordered consumers first, then every pod's publishers at once. */
async function viaNatsBench(ctx: Context, s: MatrixSpec, e: Effective, timeoutMs: number): Promise<Row> {
  const commands = await freshStreams(ctx, streamsOf(s, e.pods, e.replicas));
  const procs: CliProc[] = [];
  try {
    const subs = Array.from({ length: e.pods }, (_, p) => {
      const args = [
        "bench",
        "js",
        "ordered",
        "--stream",
        podStream(s.layout, p),
        "--filter",
        podSubject(s.layout, p),
        "--clients",
        String(SUBS_PER_POD),
        "--msgs",
        String(e.msgs),
        "--no-progress",
      ];
      commands.push(`nats ${args.join(" ")}`);
      return track(procs, startNats(args, nodeFor(ctx, p), timeoutMs));
    });
    await Promise.all(subs.map((p) => printed(p, /\] Starting JetStream ordered ephemeral consumer,/, SUBS_PER_POD, 15_000)));
    const pubs = Array.from({ length: e.pods }, (_, p) => {
      const mode = s.publish === "sync" ? ["sync"] : ["async"];
      const args = [
        "bench",
        "js",
        "pub",
        ...mode,
        podSubject(s.layout, p),
        "--stream",
        podStream(s.layout, p),
        "--clients",
        String(PUBS_PER_POD),
        "--msgs",
        String(e.msgs),
        "--size",
        String(s.size),
        "--no-progress",
        ...(s.publish === "async" ? ["--batch", String(ASYNC_BATCH)] : []),
      ];
      commands.push(`nats ${args.join(" ")}`);
      return track(procs, startNats(args, nodeFor(ctx, p), timeoutMs));
    });
    const outs = await Promise.all([...pubs, ...subs].map((p) => p.done));
    const bad = outs.find((o) => o.code !== 0);
    if (bad) throw new Error(bad.timedOut ? `nats bench timed out after ${timeoutMs} ms` : `nats bench exited ${bad.code}: ${bad.stderr.trim().slice(-300)}`);
    const parsed: BenchOutput[] = outs.map((o) => parseBench(o.stdout));
    const pubOut = parsed.slice(0, e.pods);
    const subOut = parsed.slice(e.pods);
    return matrixRow(ctx, s, e, "nats bench", dedupe(commands), ratesFromBench(pubOut), ratesFromBench(subOut), [...pubOut[0]!.lines, ...subOut[0]!.lines]);
  } catch (err) {
    return matrixRow(ctx, s, e, "nats bench", dedupe(commands), undefined, undefined, [], errText(err));
  } finally {
    procs.forEach((p) => p.kill());
    await removeStreams(
      ctx,
      streamsOf(s, e.pods, e.replicas).map((x) => x.name),
    );
  }
}

/** The same pods with pub-cluster (2 publisher processes per pod) and a nats.js process of 10 ordered consumers per pod. */
async function viaNode(ctx: Context, s: MatrixSpec, e: Effective, timeoutMs: number): Promise<Row> {
  const commands = await freshStreams(ctx, streamsOf(s, e.pods, e.replicas));
  const perPub = Math.ceil(e.msgs / PUBS_PER_POD);
  // pub-cluster ends with one end marker per publisher process: the consumers count those too.
  const expect = perPub * PUBS_PER_POD + PUBS_PER_POD;
  const consumers = Array.from({ length: e.pods }, (_, p) =>
    startNodeJob({
      kind: "ordered",
      servers: nodeFor(ctx, p),
      timeoutMs,
      stream: podStream(s.layout, p),
      filter: podSubject(s.layout, p),
      clients: SUBS_PER_POD,
      expect,
    }),
  );
  try {
    await Promise.all(consumers.map((c) => c.ready));
    const subject = podSubject(s.layout, 0);
    const prefix = s.layout === "one" ? "default." : "";
    commands.push(`(nats.js) ${SUBS_PER_POD} ordered consumers per pod on ${podStream(s.layout, 0)}, filter ${subject}, each expecting ${expect}`);
    const pubs = await Promise.all(
      Array.from({ length: e.pods }, (_, p) => {
        const channel = podSubject(s.layout, p).slice(prefix.length);
        const args = [
          "--target",
          "jetstream",
          "-H",
          "127.0.0.1",
          "--port",
          String(portOf(nodeFor(ctx, p))),
          "-c",
          String(PUBS_PER_POD),
          "-t",
          "0",
          "-n",
          String(perPub),
          "-p",
          "1",
          "--size",
          String(s.size),
          "--channel",
          channel,
          "--subject-prefix",
          prefix,
          ...(s.publish === "sync" ? ["--sync"] : ["--window", String(ASYNC_BATCH)]),
        ];
        return runPubCluster(args, timeoutMs);
      }),
    );
    commands.push(pubs[0]!.command + (e.pods > 1 ? ` (and one per pod)` : ""));
    const subsRes = await Promise.all(consumers.map((c) => c.result));
    const timedOut = subsRes.filter((r) => r.timedOut).length;
    if (timedOut)
      throw new Error(
        `${timedOut} consumer processes timed out (received ${subsRes.map((r) => r.rates.received).join(", ")} of ${expect * SUBS_PER_POD} each)`,
      );
    const pub = ratesOverPods(pubs.map((p) => ratesFromAggregate(p.result.ratePerS, PUBS_PER_POD)));
    const sub = ratesFromNode(subsRes.map((r) => r.rates));
    const out = matrixRow(ctx, s, e, "nats.js", commands, pub, sub, [
      ...nodeLines("pub-cluster --target jetstream", pub),
      ...nodeLines("nats.js ordered consumers", sub),
    ]);
    out.toolCpuPct = Math.max(...pubs.map((p) => p.cpuPct), ...subsRes.map((r) => r.cpuPct));
    return out;
  } catch (err) {
    consumers.forEach((c) => c.kill());
    return matrixRow(ctx, s, e, "nats.js", commands, undefined, undefined, [], errText(err));
  } finally {
    await removeStreams(
      ctx,
      streamsOf(s, e.pods, e.replicas).map((x) => x.name),
    );
  }
}

const dedupe = (xs: string[]): string[] => [...new Set(xs)];

/** Runs seed 000 on the current target. On a single node R3 rows run as R1; a row that then repeats another is skipped. */
export async function runMatrix(ctx: Context): Promise<void> {
  const seen = new Map<string, string>();
  for (const s of MATRIX) {
    const e = effective(ctx, s);
    const key = `${s.layout}|${s.size}|${e.replicas}|${s.publish}|${s.storage}|${e.pods}`;
    const twin = seen.get(key);
    if (twin) {
      ctx.log(`[000] ${s.workload}: same configuration as ${twin} on this target, not run again`);
      continue;
    }
    seen.set(key, s.workload);
    // Generous bounds: a sync R3 10 KB row moves ~100 msgs/s per publisher on a loaded box.
    const timeoutMs = ctx.opts.quick ? 60_000 : 240_000;
    ctx.log(`[000] ${s.workload}: ${e.config}`);
    let go = await viaNatsBench(ctx, s, e, timeoutMs);
    if (go.status === "failed") {
      // natscli against a 3-node cluster on a loaded box exits 1 now and then (once in a CI run): one more
      // try, and the row says so; a second failure stands.
      ctx.log(`[000] ${s.workload}: nats bench failed (${go.note ?? "?"}); running it once more`);
      const again = await viaNatsBench(ctx, s, e, timeoutMs);
      go = again.status === "failed" ? again : { ...again, note: `second try; the first failed: ${go.note ?? "?"}` };
    }
    ctx.add(go);
    if (!ctx.opts.quick || s.quickNode) ctx.add(await viaNode(ctx, s, e, timeoutMs));
  }
}
