// bench:connections — many sockets on one channel: how long they take to connect and subscribe, what each
// costs the gateway in resident memory, and how long a message takes to reach every one of them.
//   npm run bench -- connections --sockets 100000 [--messages 5] [--workers N] [--procs P] [--no-netns]
// The gateway gets enough workers that none holds more sockets than the 20,000 open files a process may have
// (ceil(sockets / 18,000), at least 2), sub-cluster as many processes. Beyond one source address's ephemeral
// ports, sub-cluster spreads the sockets over 127.0.0.2, 127.0.0.3, … by itself and says so.
// Run as root with `unshare`, the benchmark takes a network namespace of its own (loopback only), so its
// 100,000 sockets take no ports from other programs on the machine. Writes loadtest/results/connections.md.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fmt, startGatewayProc, startNats, until } from "./common.js";
import { inOwnNetns } from "./netns.js";
import { std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { commandLine, reportPath, sibling, writeReport } from "../kit/results.js";
import { bounded, PUB_CLI, runNode, SUB_CLI, TreeCpu, treeRss } from "../compare/proc.js";
import { LatencyStats } from "../../subtools/src/shared/mod.js";
import type { SubResult } from "../../subtools/src/result.js";

const log = (s: string): void => console.log(`[bench:connections] ${s}`);
const PER_PROCESS = 18_000;

const BENCH = defineBench("connections", {
  sockets: { type: "number", integer: true, min: 1, default: 20_000, quick: 500, help: "sockets on the one channel" },
  messages: std("messages", { default: 5, quick: 2 }),
  workers: std("workers", { help: "gateway workers (default: one per 18,000 sockets, at least 2)" }),
  procs: std("procs", { help: "sub-cluster processes (default: one per 18,000 sockets)" }),
  "no-netns": { type: "boolean", help: "stay in this network namespace (as root the bench takes one of its own)" },
  out: std("out", { help: "the report's file (default loadtest/results/connections.md, and .json beside it)" }),
  "no-write": std("no-write"),
  quick: std("quick"),
});

runBench(BENCH, async ({ flags: v, argv }) => {
  const code = inOwnNetns(argv, log);
  if (code !== null) return code;
  const { sockets, messages } = v;
  const workers = v.workers ?? Math.max(2, Math.ceil(sockets / PER_PROCESS));
  const procs = v.procs ?? Math.max(1, Math.ceil(sockets / PER_PROCESS));
  const report = reportPath(v, "connections.md");
  const per = Math.ceil(sockets / procs);
  const total = per * procs;
  const work = mkdtempSync(join(tmpdir(), "fgw-bench-conn-"));
  const nats = await startNats();
  // MAX_CONNECTIONS is per worker (50,000 by default): enough; per-IP limits off (every socket is local).
  const gw = await startGatewayProc(nats.url, workers);
  try {
    await new Promise((r) => setTimeout(r, 2_000)); // workers settle after start-up before the baseline is read
    const before = treeRss(gw.proc.pid!);
    log(
      `gateway on port ${gw.port} with ${workers} workers; ${fmt(total)} sockets from ${procs} sub-cluster processes × ${fmt(per)}; gateway RSS before ${(before.nodeB / 1048576).toFixed(0)} MB`,
    );
    const json = join(work, "sub.json");
    const t0 = performance.now();
    const sub = runNode([
      SUB_CLI,
      "-c",
      String(procs),
      "-n",
      String(per),
      "-p",
      String(gw.port),
      "--channel",
      "conn.all",
      "--expect",
      String(messages),
      "-d",
      String(600),
      "--idle",
      "60",
      "--json",
      json,
    ]);
    let lastShown = 0;
    await until(
      () => {
        if (sub.child.exitCode !== null) throw new Error(`sub-cluster exited: ${sub.out().slice(-3000)}`);
        if (performance.now() - lastShown > 10_000) {
          lastShown = performance.now();
          const m = [...sub.out().matchAll(/(\d+)s clients (\d+)\/\d+ /g)].at(-1);
          if (m) log(`  ${m[1]} s: ${fmt(Number(m[2]))} subscribed`);
        }
        return sub.out().includes(`clients ${total}/${total} `) || undefined;
      },
      600_000,
      `${total} sockets subscribed`,
    ).catch((e: Error) => {
      throw new Error(`${e.message}\n${sub.out().slice(-2500)}`);
    });
    const connectS = (performance.now() - t0) / 1000;
    log(`${fmt(total)} sockets subscribed in ${connectS.toFixed(1)} s`);
    const spread = /spreading [^\n]*/.exec(sub.out())?.[0] ?? "no spreading (one source address was enough)";
    await new Promise((r) => setTimeout(r, 3_000));
    const after = treeRss(gw.proc.pid!);
    const perConnKB = (after.nodeB - before.nodeB) / total / 1024;
    log(`gateway RSS ${(after.nodeB / 1048576).toFixed(0)} MB: ${perConnKB.toFixed(2)} KB per connection`);
    const gwCpu = new TreeCpu(gw.proc.pid!).start();
    const pub = runNode([PUB_CLI, "-t", "3000", "-n", "1", "-c", "1", "-p", String(messages), "--port", String(gw.port), "--channel", "conn.all", "--quiet"]);
    await bounded(pub, (messages * 3 + 60) * 1000);
    const end = await bounded(sub, 300_000);
    const cpu = gwCpu.end();
    const r = JSON.parse(readFileSync(json, "utf8")) as SubResult;
    const lat = LatencyStats.fromJSON(r.latency);
    const res = {
      sockets: total,
      workers,
      procs,
      messages,
      connectS,
      spread,
      rssBeforeMB: before.nodeB / 1048576,
      rssAfterMB: after.nodeB / 1048576,
      perConnKB,
      received: r.counts.received,
      expected: r.counts.expected,
      lost: r.counts.lost,
      connected: r.counts.everConnected,
      p50Ms: lat.percentileUs(50) / 1000,
      p99Ms: lat.percentileUs(99) / 1000,
      maxMs: lat.max / 1000,
      meanMs: lat.meanUs / 1000,
      gatewayUsPerDelivery: r.counts.received ? (cpu.nodeS * 1e6) / r.counts.received : NaN,
      cut: end.cut,
      load: loadavg()[0]!,
      at: new Date().toISOString(),
      cores: cpus().length,
      toolCpu: r.cpu.filter((c) => c.name !== "master").map((c) => c.peakPct),
    };
    const md = [
      "# bench:connections — sockets on one channel",
      "",
      `Measured ${res.at.slice(0, 16).replace("T", " ")} UTC by \`${commandLine("connections", argv)}\` on ${res.cores} shared cores${process.env.FGW_IN_NETNS ? ", in a network namespace of its own" : ""}: ` +
        `gateway with ${workers} workers (the open-files limit is 20,000 per process) on nats-server, \`sub-cluster -c ${procs} -n ${fmt(per)}\` (lean engine), ` +
        `then ${messages} messages 3 s apart through the gateway's WebSocket publish.`,
      "",
      `sub-cluster: ${spread}.`,
      "",
      "| sockets | subscribed | connect + subscribe, s | gateway RSS before → after, MB | RSS per connection | delivered / expected | time until a socket has a message: p50 / p99 / MAX ms | MEAN ms |",
      "|---:|---:|---:|---:|---:|---:|---|---:|",
      `| ${fmt(total)} | ${fmt(res.connected)} | ${connectS.toFixed(1)} | ${res.rssBeforeMB.toFixed(0)} → ${res.rssAfterMB.toFixed(0)} | **${perConnKB.toFixed(2)} KB** | ${fmt(res.received)} / ${fmt(res.expected)} | **${res.p50Ms.toFixed(0)} / ${res.p99Ms.toFixed(0)} / ${res.maxMs.toFixed(0)}** | ${res.meanMs.toFixed(0)} |`,
      "",
      "RSS is the gateway's node processes (primary and workers, nats-server apart) read from `/proc`, before the sockets and 3 s after the last one subscribed. " +
        "The time until a socket has a message is each delivery's latency (publish → frame read by the client), over every socket and message: MAX is the last socket of the slowest message. " +
        `The clients share the ${res.cores} cores with the gateway; sub-cluster's processes peaked at ${res.toolCpu.map((p) => `${p.toFixed(0)} %`).join(", ")} of a core.`,
      "",
    ].join("\n");
    if (report) {
      writeReport(report, md);
      writeReport(sibling(report, ".json"), JSON.stringify(res, null, 2) + "\n");
    }
    console.log(md);
  } finally {
    gw.proc.kill("SIGTERM");
    nats.proc.kill("SIGTERM");
    await until(() => gw.proc.exitCode !== null || gw.proc.signalCode !== null || undefined, 30_000, "gateway exit").catch(() => gw.proc.kill("SIGKILL"));
    rmSync(work, { recursive: true, force: true });
  }
});
