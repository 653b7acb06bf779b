// Seed 000's layout rows through the gateway: the same pods (2 publishers, 10 subscribers, each pod on its own
// channel) publishing over the gateway's WebSocket (pub-cluster --target gateway-ws --sync) and receiving its
// fan-out (sub-cluster, a gateway WebSocket client each), with every channel in the gateway's one stream
// (layout "one") or each app prefix in a stream of its own through a namespaces file (layout "app"). Each row
// starts its own gateway (2 workers) on the target's servers with fresh streams, and stops it at the end.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { waitFor } from "#testkit/wait.js";
import { bounded, runNode, SUB_CLI, type Proc } from "../../compare/proc.js";
import type { SubResult } from "../../../subtools/src/result.js";
import { errText, removeStreams, type Context } from "./context.js";
import { cpuWindow } from "./cpu.js";
import { effective, matrixRow, PUBS_PER_POD, SUBS_PER_POD, type Effective, type MatrixSpec } from "./matrix.js";
import { runPubCluster, type PubClusterRun } from "./node-path.js";
import {
  deliveryRates,
  expectedStreamMessages,
  GATEWAY_WORKERS,
  layoutRows,
  podChannel,
  rowStreams,
  streamMismatches,
  type PodDeliveries,
  type RowStreams,
} from "./layouts.js";
import { runNats } from "./natscli.js";
import { nodeLines, ratesFromAggregate, ratesOverPods } from "./rows.js";

/** Rows started in this process: each row's streams and subjects are named after its number. */
let rowsStarted = 0;

/** The gateway of one row, with the flags it was started with (for the row's commands). */
async function startRowGateway(ctx: Context, s: MatrixSpec, e: Effective, rs: RowStreams, dir: string): Promise<{ gw: GatewayHandle; command: string }> {
  const args = ["--stream-name", rs.stream, "--subject-prefix", rs.subjectPrefix, "--stream-replicas", String(e.replicas), "--stream-storage", s.storage];
  if (rs.namespaces) {
    const file = join(dir, "namespaces.json");
    writeFileSync(file, JSON.stringify(rs.namespaces, null, 2) + "\n");
    args.push("--namespaces-file", file);
  }
  const gw = await startGateway({
    natsUrl: ctx.servers.servers,
    workers: GATEWAY_WORKERS,
    logLevel: "info",
    inheritStderr: true,
    // Streams of three replicas, one per app, are created one after another on a busy cluster.
    readyTimeoutMs: 90_000,
    args: ["--max-connections-per-ip=-1", "--connect-rate-per-ip=-1", "--frame-rate=-1", "--read-rate-per-ip=-1", "--publish-rate=-1", ...args],
  });
  return { gw, command: `gateway --workers ${GATEWAY_WORKERS} --nats-url <the target's servers> ${args.join(" ").replace(dir, "<tmp>")}` };
}

/** Messages held by each stream (undefined: no such stream). */
async function streamMessages(ctx: Context, names: readonly string[]): Promise<Map<string, number | undefined>> {
  const out = new Map<string, number | undefined>();
  for (const n of names) {
    const info = await runNats(["stream", "info", n, "--json"], ctx.servers.servers).catch(() => undefined);
    out.set(n, info && info.code === 0 ? (JSON.parse(info.stdout) as { state: { messages: number } }).state.messages : undefined);
  }
  return out;
}

/** One pod's subscribers: sub-cluster, one process of 10 gateway WebSocket clients on the pod's channel. */
function startSubscribers(port: number, channel: string, expect: number, timeoutMs: number, json: string): { proc: Proc; args: string[] } {
  const args = [
    "-c",
    "1",
    "-n",
    String(SUBS_PER_POD),
    "-p",
    String(port),
    "--channel",
    channel,
    "--expect",
    String(expect),
    "--idle",
    "30",
    "-d",
    String(Math.ceil(timeoutMs / 1000)),
    "--no-clock",
    "--json",
    json,
  ];
  return { proc: runNode([SUB_CLI, ...args]), args };
}

async function viaGateway(ctx: Context, s: MatrixSpec, e: Effective, timeoutMs: number): Promise<void> {
  const rs = rowStreams(s.layout, e.pods, ++rowsStarted, s.storage, e.replicas);
  const dir = mkdtempSync(join(tmpdir(), "fgw-js-layout-"));
  const commands: string[] = [];
  if (rs.namespaces) commands.push(`namespaces file: ${JSON.stringify(rs.namespaces)}`);
  const perPub = Math.ceil(e.msgs / PUBS_PER_POD);
  const expect = perPub * PUBS_PER_POD;
  const subs: Array<{ proc: Proc; json: string }> = [];
  let gw: GatewayHandle | undefined;
  try {
    await removeStreams(ctx, rs.all);
    const started = await startRowGateway(ctx, s, e, rs, dir);
    gw = started.gw;
    commands.push(started.command);
    for (let p = 0; p < e.pods; p++) {
      const json = join(dir, `sub-${p}.json`);
      const sub = startSubscribers(gw.port, podChannel(p), expect, timeoutMs, json);
      subs.push({ proc: sub.proc, json });
      if (p === 0) commands.push(`sub-cluster ${sub.args.join(" ").replace(dir, "<tmp>")} (one per pod, on its channel)`);
    }
    const ready = `clients ${SUBS_PER_POD}/${SUBS_PER_POD} `;
    await waitFor(
      () => {
        const dead = subs.find((x) => x.proc.child.exitCode !== null);
        if (dead) throw new Error(`sub-cluster exited before publishing: ${dead.proc.out().slice(-500)}`);
        return subs.every((x) => x.proc.out().includes(ready)) || undefined;
      },
      { timeoutMs: 60_000, what: `${e.pods * SUBS_PER_POD} gateway subscribers connected` },
    );
    const gwCpu = cpuWindow([gw.process.pid!]);
    const pubs: PubClusterRun[] = [];
    // Every pod's publishers have ended (or been killed at their limit) before a failure is reported.
    const settled = await Promise.allSettled(
      Array.from({ length: e.pods }, async (_, p) => {
        const args = ["--target", "gateway-ws", "-H", "127.0.0.1", "--port", String(gw!.port), "-c", String(PUBS_PER_POD), "-t", "0"];
        args.push("-n", String(perPub), "-p", "1", "--size", String(s.size), "--channel", podChannel(p), "--sync");
        pubs[p] = await runPubCluster(args, timeoutMs);
      }),
    );
    const pubFailed = settled.find((x) => x.status === "rejected");
    if (pubFailed) throw pubFailed.reason;
    commands.push(`${pubs[0]!.command} (one per pod, on its channel)`);
    const results = await Promise.all(
      subs.map(async (x, p): Promise<{ r: SubResult; pod: PodDeliveries }> => {
        const { cut } = await bounded(x.proc, 60_000);
        if (cut) throw new Error(`pod ${p + 1}'s subscribers were still waiting 60 s after its publishers ended`);
        const r = JSON.parse(readFileSync(x.json, "utf8")) as SubResult;
        // Over the subscribers' first to last message, as nats bench times its subscribers.
        if (!r.messagesUs) throw new Error(`pod ${p + 1}'s subscribers received nothing`);
        const windowMs = (r.messagesUs.last - r.messagesUs.first) / 1000;
        return { r, pod: { clients: SUBS_PER_POD, received: r.counts.received, windowMs } };
      }),
    );
    const gatewayCpuPct = gwCpu.read();
    const short = results.filter(({ r }) => r.counts.lost > 0 || r.counts.received < r.counts.expected);
    if (short.length)
      throw new Error(
        `subscribers missed messages: ${short.map(({ r }) => `${r.channels[0]} received ${r.counts.received} of ${r.counts.expected} (lost ${r.counts.lost})`).join("; ")}`,
      );
    // The messages are where the layout puts them: the gateway's one stream, or each pod's namespace stream.
    const wrong = streamMismatches(expectedStreamMessages(rs, e.pods, expect + PUBS_PER_POD), await streamMessages(ctx, rs.all));
    if (wrong.length) throw new Error(wrong.join("; "));
    const pub = ratesOverPods(pubs.map((p) => ratesFromAggregate(p.result.ratePerS, PUBS_PER_POD)));
    const sub = deliveryRates(results.map((x) => x.pod));
    const delivered = results.reduce((a, x) => a + x.r.counts.received, 0);
    const out = matrixRow(ctx, s, e, "gateway WS", commands, pub, sub, [
      ...nodeLines("pub-cluster --target gateway-ws --sync", pub),
      ...nodeLines("sub-cluster (gateway WebSocket clients)", sub),
      `deliveries ${delivered.toLocaleString("en-US")} (every subscriber every message of its pod), ${Math.round(sub.aggregate).toLocaleString("en-US")}/s over the pods; gateway ${Math.round(gatewayCpuPct)} % of a core`,
    ]);
    out.gatewayCpuPct = gatewayCpuPct;
    out.toolCpuPct = Math.max(...pubs.map((p) => p.cpuPct), ...results.flatMap(({ r }) => r.cpu.map((c) => c.avgPct)));
    ctx.add(out);
  } catch (err) {
    ctx.add(matrixRow(ctx, s, e, "gateway WS", commands, undefined, undefined, [], errText(err)));
  } finally {
    await Promise.all(subs.map((x) => x.proc.stop(2_000)));
    await gw?.stop();
    await removeStreams(ctx, rs.all);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the layout rows through the gateway on the current target, in round `round`'s order. */
export async function runGatewayLayouts(ctx: Context, round: number): Promise<void> {
  const timeoutMs = ctx.opts.quick ? 60_000 : 240_000;
  for (const s of layoutRows(round)) {
    const e = effective(ctx, s);
    ctx.log(`[000-gateway] ${s.workload}: ${e.config}; through the gateway (${GATEWAY_WORKERS} workers${s.layout === "app" ? ", a namespace per app" : ""})`);
    await viaGateway(ctx, s, e, timeoutMs);
  }
}
