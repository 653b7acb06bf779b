// Seed 003: publish latency with 0, 1 and 10 ms added on the network path (each way), sequential publishing
// (await each ack: the users' V1, sync over async) against pipelined (100 in flight: their V2, async I/O).
// Preferred network: two namespaces joined by veth with tc netem (netns.ts). Where that is not permitted the
// netem rows are skipped with the reason, and the same cases run through a user-space delay proxy on loopback
// (the test kit's TCP proxy, gateway/testkit/tcp-proxy.ts, in delay mode), labelled as such.
import { startNatsServer } from "#testkit/nats-server.js";
import type { Options } from "./options.js";
import type { Row } from "./rows.js";
import { latencyFromBench, latencyFromNode, nodeLines, ratesFromBench, ratesFromNode, type Latency, type Path, type Rates } from "./rows.js";
import { parseBench, runNats } from "./natscli.js";
import { streamAddArgs, errText } from "./context.js";
import { startNodeJob } from "./node-path.js";
import { openNetemLab } from "./netns.js";
import { startTcpProxy } from "#testkit/tcp-proxy.js";

export const DELAYS_MS = [0, 1, 10] as const;
const SIZE = 128;
const WINDOW = 100;
const STREAM = { name: "LAT", subjects: ["lat.>"], storage: "file" as const, replicas: 1 };

type Net = { kind: "netem" | "delay proxy"; url: string; prefix: readonly string[]; setDelay(ms: number): void };
type LatencyCtx = { opts: Options; log(l: string): void; add(r: Row): void };
type Mode = "sequential" | "pipelined";

function row(
  net: Net,
  mode: Mode,
  delay: number,
  path: Path,
  config: string,
  commands: string[],
  parts: { value?: number; pub?: Rates; latency?: Latency; lines?: string[]; error?: string; note?: string },
): Row {
  return {
    workload: `003.${mode}-${delay}`,
    seed: "003",
    target: "single",
    path,
    config: `${net.kind}: +${delay} ms each way (${2 * delay} ms round trip); ${config}`,
    commands,
    ...(parts.pub ? { pub: parts.pub } : {}),
    ...(parts.latency ? { latency: parts.latency } : {}),
    ...(parts.value !== undefined ? { value: parts.value } : {}),
    metric: "ms per publish (sequential: mean ack wait; pipelined: run time / messages)",
    status: parts.error ? "failed" : "ok",
    ...(parts.error || parts.note ? { note: parts.error ?? parts.note } : {}),
    lines: parts.lines ?? [],
    round: 0,
  };
}

async function goCase(net: Net, mode: Mode, delay: number, count: number, timeoutMs: number): Promise<Row> {
  const args = [
    "bench",
    "js",
    "pub",
    mode === "sequential" ? "sync" : "async",
    "lat.bench",
    "--stream",
    STREAM.name,
    "--clients",
    "1",
    "--msgs",
    String(count),
    "--size",
    String(SIZE),
    "--no-progress",
    ...(mode === "pipelined" ? ["--batch", String(WINDOW)] : []),
  ];
  const config =
    mode === "sequential"
      ? `${count} publishes of 128 B, each awaits its ack`
      : `${count} publishes of 128 B in batches of ${WINDOW}, each batch's acks awaited`;
  const commands = [`nats ${args.join(" ")}`];
  try {
    const o = await runNats(args, net.url, timeoutMs, net.prefix);
    const b = parseBench(o.stdout);
    const pub = ratesFromBench([b]);
    const perMessage = 1000 / pub.aggregate;
    if (mode === "sequential") {
      const latency = latencyFromBench(b.latencyUs!, perMessage);
      return row(net, mode, delay, "nats bench", config, commands, { value: latency.avg, pub, latency, lines: b.lines });
    }
    // nats bench times whole batches when pipelining; the row keeps the per-message time only.
    return row(net, mode, delay, "nats bench", config, commands, {
      value: perMessage,
      pub,
      lines: b.lines,
      note: `nats bench times each batch of ${WINDOW}; per-message percentiles are in the nats.js row`,
    });
  } catch (e) {
    return row(net, mode, delay, "nats bench", config, commands, { error: errText(e) });
  }
}

async function nodeCase(net: Net, mode: Mode, delay: number, count: number, timeoutMs: number): Promise<Row> {
  const window = mode === "sequential" ? 1 : WINDOW;
  const config = mode === "sequential" ? `${count} publishes of 128 B, each awaits its ack` : `${count} publishes of 128 B, ${WINDOW} in flight`;
  const commands = [`(nats.js) js.publish("lat.bench") × ${count}, ${window} in flight`];
  try {
    const j = startNodeJob({ kind: "publish", servers: net.url, timeoutMs, subject: "lat.bench", count, size: SIZE, window }, net.prefix);
    const r = await j.result;
    if (r.timedOut) throw new Error(`timed out after ${r.rates.received} of ${count} publishes`);
    const latency = latencyFromNode(r.latency!);
    const pub = ratesFromNode([r.rates]);
    return row(net, mode, delay, "nats.js", config, commands, {
      value: mode === "sequential" ? latency.avg : latency.perMessage!,
      pub,
      latency,
      lines: nodeLines(`nats.js ${mode} publish`, pub, latency),
    });
  } catch (e) {
    return row(net, mode, delay, "nats.js", config, commands, { error: errText(e) });
  }
}

async function runCases(ctx: LatencyCtx, net: Net): Promise<void> {
  const { counts, quick } = ctx.opts;
  const timeoutMs = quick ? 30_000 : 180_000;
  await runNats(streamAddArgs(STREAM), net.url, 15_000, net.prefix);
  for (const delay of DELAYS_MS) {
    net.setDelay(delay);
    ctx.log(`[003] ${net.kind}: +${delay} ms each way`);
    for (const mode of ["sequential", "pipelined"] as const) {
      const n = mode === "sequential" ? counts.latencySequential : counts.latencyPipelined;
      for (const r of [await goCase(net, mode, delay, n, timeoutMs), await nodeCase(net, mode, delay, n, timeoutMs)]) {
        ctx.add(r);
        ctx.log(
          `[003] ${r.workload} · ${r.path}: ${r.status === "ok" ? `${r.value!.toFixed(3)} ms per publish` : `${r.status.toUpperCase()} ${r.note ?? ""}`}`,
        );
      }
    }
  }
}

/** Runs seed 003; returns a sentence on how the latency was added (or why netem was skipped) for the report. */
export async function runLatency(ctx: LatencyCtx): Promise<string> {
  const lab = await openNetemLab().catch((e: unknown) => ({ skipped: `could not start nats-server in the namespace (${errText(e)})` }));
  if (!("skipped" in lab)) {
    try {
      await runCases(ctx, { kind: "netem", url: lab.serverUrl, prefix: lab.clientPrefix, setDelay: (ms) => lab.setDelay(ms) });
    } finally {
      await lab.close();
    }
    return "Latency added with tc netem on a veth pair between two network namespaces (server in one, clients in the other).";
  }
  const why = `SKIPPED the netem case: ${lab.skipped}. The same cases ran through a user-space delay proxy on loopback instead.`;
  ctx.log(`[003] ${why}`);
  for (const delay of DELAYS_MS) {
    ctx.add({
      workload: `003.netem-${delay}`,
      seed: "003",
      target: "single",
      path: "nats bench",
      config: `netem: +${delay} ms each way`,
      commands: [],
      metric: "ms per publish",
      status: "skipped",
      note: lab.skipped,
      lines: [],
      round: 0,
    });
  }
  const server = await startNatsServer();
  const proxy = await startTcpProxy({ host: "127.0.0.1", port: server.port });
  try {
    await runCases(ctx, { kind: "delay proxy", url: proxy.url, prefix: [], setDelay: (ms) => proxy.delay(ms) });
  } finally {
    await proxy.close();
    await server.stop();
  }
  return why;
}
