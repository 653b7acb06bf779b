// npm run bench -- peers (alias npm run compare:peers) — the same clients (sub-cluster, lean engine) and publisher (pub-cluster) against this
// gateway and the servers users would pick instead, one after another in one run:
//   gateway     this gateway, 2 workers, embedded nats-server (JetStream)
//   socketio    Socket.IO 4, 2 node:cluster workers joined by @socket.io/redis-adapter (redis-server)
//   centrifuge  a server on github.com/centrifugal/centrifuge v0.40.1, memory broker (Go, all cores)
//   centrifugo  the real Centrifugo v6.9.1 server (.tools/bin/centrifugo, scripts/setup-centrifugo.sh): memory
//               engine, no history, anonymous clients may subscribe and publish in the namespace `peers`
//   uws         bare uWebSockets.js in one process, no broker: the floor
//   uws2        the same in 2 processes on one port (SO_REUSEPORT), a primary numbering the messages: the floor
//               with the gateway's shape (2 workers), so CPU per delivery compares like with like
// Per server and row: delivered/expected, latency (p50, p99, MEAN, HARMONIC MEAN), server CPU per delivery
// (its whole process tree, brokers included, from /proc), RSS idle (clients connected) and peak under load.
// Writes loadtest/results/peers.md, peers.json and peers.png (--out DIR elsewhere; --quick writes none unless --out).
import { createServer, type AddressInfo } from "node:net";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { ROOT, until } from "../bench/common.js";
import { LatencyStats } from "../../subtools/src/shared/mod.js";
import type { SubResult } from "../../subtools/src/result.js";
import { bounded, PUB_CLI, runNode, runProc, startGateway, SUB_CLI, TreeCpu, treeRss, type Proc } from "./proc.js";
import { renderPeersMarkdown, renderPeersSvg, type PeerRow, type PeersMeta, SERVERS, type ServerName } from "./peers-report.js";
import { svgToPng } from "./chart.js";
import { stagesLine, summarizeStages, type StageSummary } from "./stages.js";
import { startRedisServer } from "#testkit/redis-server.js";
import { FlagError, std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { reportPath } from "../kit/results.js";

const log = (s: string): void => console.log(`[compare:peers] ${s}`);
const PEERS = resolve(ROOT, "loadtest/peers");

type Server = { port: number; pid: number; stop(): Promise<unknown>; extra: Proc[] };

/** Starts a process that prints "ready <port>". */
async function readyProc(cmd: string, args: string[], what: string): Promise<{ proc: Proc; port: number }> {
  const proc = runProc(cmd, args);
  const { child, out } = proc;
  const port = await until(
    () => {
      if (child.exitCode !== null) throw new Error(`${what} exited ${child.exitCode}: ${out().slice(-1500)}`);
      const m = /ready (\d+)/.exec(out());
      return m ? Number(m[1]) : undefined;
    },
    60_000,
    `${what} ready`,
  );
  return { proc, port };
}

/** The test kit's redis-server (it picks the port and waits for PONG), as a Proc for the Socket.IO row. */
async function startRedis(): Promise<{ proc: Proc; port: number }> {
  const r = await startRedisServer({ extraArgs: ["--maxclients", "10000"] });
  const child = r.process;
  const exited = new Promise<number | null>((res) => {
    if (child.exitCode !== null || child.signalCode !== null) res(child.exitCode);
    else child.once("exit", (c) => res(c));
  });
  return {
    port: r.port,
    proc: {
      child,
      out: () => "",
      exited,
      stop: async () => {
        await r.stop();
        return child.exitCode;
      },
    },
  };
}

async function startServer(name: ServerName, work: string): Promise<Server> {
  switch (name) {
    case "gateway": {
      const g = await startGateway("jetstream", 2, join(work, `nats-${Date.now()}`));
      return { port: g.port, pid: g.child.pid!, stop: () => g.stop(15_000), extra: [] };
    }
    case "socketio": {
      const redis = await startRedis();
      const s = await readyProc(
        process.execPath,
        [join(PEERS, "socketio/server.mjs"), "--port", "0", "--workers", "2", "--redis-url", `redis://127.0.0.1:${redis.port}`],
        "Socket.IO server",
      );
      return {
        port: s.port,
        pid: s.proc.child.pid!,
        stop: async () => {
          await s.proc.stop();
          await redis.proc.stop();
        },
        extra: [redis.proc],
      };
    }
    case "centrifuge": {
      const s = await readyProc(join(PEERS, "centrifuge/bin/centrifuge-peer"), ["-port", "0"], "centrifuge server");
      return { port: s.port, pid: s.proc.child.pid!, stop: () => s.proc.stop(), extra: [] };
    }
    case "centrifugo":
      return startCentrifugo(work);
    case "uws":
    case "uws2": {
      const procs = name === "uws2" ? ["--procs", "2"] : [];
      const s = await readyProc(process.execPath, [join(PEERS, "uws/server.mjs"), "--port", "0", ...procs], "bare uWS server");
      return { port: s.port, pid: s.proc.child.pid!, stop: () => s.proc.stop(), extra: [] };
    }
  }
}

const SUB_TARGET: Record<ServerName, string> = {
  gateway: "gateway",
  socketio: "socketio",
  centrifuge: "centrifuge",
  centrifugo: "centrifuge",
  uws: "gateway",
  uws2: "gateway",
};
const PUB_TARGET: Record<ServerName, string> = {
  gateway: "gateway-ws",
  socketio: "socketio",
  centrifuge: "centrifuge",
  centrifugo: "centrifuge",
  uws: "gateway-ws",
  uws2: "gateway-ws",
};

/** Centrifugo's channels are `namespace:name`: its row's channel is in the namespace its configuration opens. */
const channelOf = (name: ServerName, clients: number, rate: number): string =>
  name === "centrifugo" ? `${CENTRIFUGO_NAMESPACE}:centrifugo.${clients}x${rate}` : `peers.${name}.${clients}x${rate}`;

const CENTRIFUGO_NAMESPACE = "peers";
const CENTRIFUGO_BIN = resolve(ROOT, ".tools/bin/centrifugo");

/**
 * Centrifugo v6 with what the other peers do: memory engine, no history or recovery, no presence, clients
 * without a token (anonymous) allowed to connect, and to subscribe and publish in one namespace; errors only
 * in its log. It listens on a port picked free here and is ready when its /health answers.
 */
async function startCentrifugo(work: string): Promise<Server> {
  const port = await freePort();
  const config = join(work, `centrifugo-${port}.json`);
  writeFileSync(
    config,
    JSON.stringify({
      http_server: { address: "127.0.0.1", port },
      log: { level: "error" },
      engine: { type: "memory" },
      usage_stats: { disabled: true },
      health: { enabled: true },
      client: { allow_anonymous_connect_without_token: true },
      channel: {
        namespaces: [
          {
            name: CENTRIFUGO_NAMESPACE,
            allow_subscribe_for_anonymous: true,
            allow_subscribe_for_client: true,
            allow_publish_for_anonymous: true,
            allow_publish_for_client: true,
          },
        ],
      },
    }),
  );
  const proc = runProc(CENTRIFUGO_BIN, ["--config", config]);
  const { child, out } = proc;
  await until(
    async () => {
      if (child.exitCode !== null) throw new Error(`centrifugo exited ${child.exitCode}: ${out().slice(-1500)}`);
      const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
        (r) => r.ok,
        () => false,
      );
      return ok || undefined;
    },
    60_000,
    "centrifugo /health",
  );
  return { port, pid: child.pid!, stop: () => proc.stop(), extra: [] };
}

/** A port free on 127.0.0.1 now (for a server that takes a port, not 0). */
function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => res(port));
    });
  });
}

/** The gateway's stage histograms (its /metrics, summed over workers) after a row; undefined when it does not answer. */
async function gatewayStages(port: number): Promise<StageSummary | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    return res.ok ? summarizeStages(await res.text()) : undefined;
  } catch {
    return undefined;
  }
}

/** RSS of the server's whole tree (for Socket.IO, its redis-server too). */
function serverRss(s: Server): number {
  const own = treeRss(s.pid);
  return (
    own.nodeB +
    own.brokerB +
    s.extra.reduce((a, p) => {
      const r = treeRss(p.child.pid!);
      return a + r.nodeB + r.brokerB;
    }, 0)
  );
}

async function measure(name: ServerName, clients: number, procs: number, rate: number, seconds: number, drainS: number, work: string): Promise<PeerRow> {
  const row: PeerRow = { server: name, clients, rate, seconds, ok: false, notes: [] };
  const started = Date.now();
  const server = await startServer(name, work);
  try {
    const rssBefore = serverRss(server);
    const channel = channelOf(name, clients, rate);
    const json = join(work, `${channel.replace(":", ".")}.json`);
    const per = Math.ceil(clients / procs);
    const total = per * procs;
    const sub = runNode([
      SUB_CLI,
      "-c",
      String(procs),
      "-n",
      String(per),
      "--target",
      SUB_TARGET[name],
      "-p",
      String(server.port),
      "--channel",
      channel,
      "-d",
      String(seconds + drainS + 20),
      "--idle",
      "10",
      "--json",
      json,
    ]);
    await until(
      () => {
        if (sub.child.exitCode !== null) throw new Error(`sub-cluster exited: ${sub.out().slice(-1500)}`);
        return sub.out().includes(`clients ${total}/${total} `) || undefined;
      },
      90_000,
      `${total} clients subscribed`,
    );
    row.connectS = (Date.now() - started) / 1000;
    await new Promise((r) => setTimeout(r, 1_000)); // let the connection burst's garbage settle before reading RSS
    row.rssIdleMB = serverRss(server) / 1048576;
    row.rssBeforeMB = rssBefore / 1048576;
    const cpu = new TreeCpu(server.pid).start();
    const extraCpu = server.extra.map((p) => new TreeCpu(p.child.pid!).start());
    let peak = 0;
    const rssTimer = setInterval(() => {
      peak = Math.max(peak, serverRss(server));
    }, 500);
    const intervalMs = Math.max(1, Math.round(1000 / rate));
    const pub = runNode([
      PUB_CLI,
      "--target",
      PUB_TARGET[name],
      "--port",
      String(server.port),
      "-t",
      String(intervalMs),
      "-n",
      "1",
      "-c",
      "1",
      "-p",
      String(Math.round(rate * seconds)),
      "--channel",
      channel,
      "--quiet",
    ]);
    const p = await bounded(pub, (seconds * 2 + 30) * 1000);
    if (p.cut) row.notes.push("publisher cut at its time limit");
    if (p.code !== 0) row.notes.push(`publisher exited ${p.code}: ${(/first error: (.*)/.exec(pub.out())?.[1] ?? "").slice(0, 200)}`);
    const s = await bounded(sub, (drainS + 40) * 1000);
    if (s.cut) row.notes.push("subscribers cut at their time limit");
    if (name === "gateway") row.stages = await gatewayStages(server.port);
    clearInterval(rssTimer);
    const c = cpu.end();
    const ex = extraCpu.map((x) => x.end());
    const r = JSON.parse(readFileSync(json, "utf8")) as SubResult;
    const lat = LatencyStats.fromJSON(r.latency);
    const serverS = c.nodeS + c.brokerS + ex.reduce((a, x) => a + x.nodeS + x.brokerS, 0);
    const brokerS = c.brokerS + ex.reduce((a, x) => a + x.nodeS + x.brokerS, 0);
    Object.assign(row, {
      ok: true,
      received: r.counts.received,
      expected: r.counts.expected,
      lost: r.counts.lost,
      connected: r.counts.everConnected,
      meanMs: lat.meanUs / 1000,
      hmeanMs: lat.harmonicMeanUs / 1000,
      p50Ms: lat.percentileUs(50) / 1000,
      p99Ms: lat.percentileUs(99) / 1000,
      maxMs: lat.max / 1000,
      serverCpuPct: (serverS / c.wallS) * 100,
      serverUsPerDelivery: r.counts.received ? (serverS * 1e6) / r.counts.received : NaN,
      brokerUsPerDelivery: r.counts.received ? (brokerS * 1e6) / r.counts.received : NaN,
      toolCpuPct: Math.max(...r.cpu.filter((x) => x.name !== "master").map((x) => x.avgPct), 0),
      rssLoadMB: peak / 1048576,
      stopReason: r.stopReason,
      wallS: (Date.now() - started) / 1000,
      loadAvg: loadavg()[0],
    } satisfies Partial<PeerRow>);
    if (/WARNING: load generator saturated/.test(sub.out())) row.notes.push("a subscriber process was saturated (>90 % of a core)");
    if (row.stages) log(`  ${stagesLine(row.stages)}`);
    return row;
  } catch (e) {
    row.notes.push((e as Error).message.split("\n")[0]!.slice(0, 300));
    return row;
  } finally {
    await server.stop();
  }
}

const BENCH = defineBench("peers", {
  quick: std("quick", { help: "200 clients, 5 s per row, 15 s of drain; writes no report unless --out is given" }),
  clients: std("clients", { default: 2000, quick: 200 }),
  rates: { type: "list", default: ["10", "100"], help: "publish rates, one row each (msg/s)" },
  seconds: std("seconds", { default: 20, quick: 5, help: "seconds of publishing per row and server" }),
  drain: { type: "number", min: 0, default: 60, quick: 15, help: "seconds a row may take after publishing before its subscribers stop" },
  procs: std("procs", { default: 2, help: "sub-cluster processes (lean engine)" }),
  servers: { type: "list", choices: SERVERS, default: SERVERS, help: "the servers to measure, in this order" },
  out: std("out", { help: "the directory peers.md, peers.json and peers.png go to (default loadtest/results)" }),
  "no-write": std("no-write"),
  render: std("render", { help: "write peers.md/.png again from a saved peers.json, without measuring" }),
});

runBench(BENCH, async ({ flags: v }) => {
  const outDir = reportPath(v, ".");
  if (v.render) {
    if (!outDir) throw new FlagError("--render writes a report: give --out DIR with --quick, and leave out --no-write");
    const saved = JSON.parse(readFileSync(v.render, "utf8")) as PeersMeta & { rows: PeerRow[] };
    return write(saved.rows, saved, outDir);
  }
  const { clients, seconds, drain: drainS, procs } = v;
  const rates = v.rates.map((r) => {
    const n = Number(r);
    if (!(n > 0)) throw new FlagError(`--rates must be numbers above 0, not ${JSON.stringify(r)}`);
    return n;
  });
  const servers = v.servers as ServerName[];
  const work = mkdtempSync(join(tmpdir(), "fgw-peers-"));
  const meta: PeersMeta = {
    startedAt: new Date().toISOString(),
    finishedAt: "",
    cores: cpus().length,
    cpuModel: cpus()[0]?.model ?? "?",
    node: process.version,
    clients,
    procs,
    seconds,
    quick: v.quick,
  };
  log(`${clients} clients (${procs} sub-cluster processes, lean engine), rates ${rates.join(", ")} msg/s, ${seconds} s each, servers ${servers.join(", ")}`);
  const rows: PeerRow[] = [];
  try {
    for (const rate of rates) {
      for (const s of servers) {
        log(`${s}: ${clients} clients × ${rate} msg/s …`);
        const r = await measure(s, clients, procs, rate, seconds, drainS, work);
        rows.push(r);
        log(
          r.ok
            ? `  ${r.received}/${r.expected} lost ${r.lost} | p50 ${r.p50Ms!.toFixed(2)} p99 ${r.p99Ms!.toFixed(2)} MEAN ${r.meanMs!.toFixed(2)} HMEAN ${r.hmeanMs!.toFixed(2)} ms | server ${r.serverUsPerDelivery!.toFixed(2)} µs/delivery (${r.serverCpuPct!.toFixed(0)} %) | RSS ${r.rssIdleMB!.toFixed(0)} → ${r.rssLoadMB!.toFixed(0)} MB${r.notes.length ? " | " + r.notes.join("; ") : ""}`
            : `  failed: ${r.notes.join("; ")}`,
        );
      }
    }
  } finally {
    meta.finishedAt = new Date().toISOString();
    rmSync(work, { recursive: true, force: true });
    if (outDir) await write(rows, meta, outDir);
    else log("no report written (--no-write, or --quick without --out)");
  }
});

async function write(rows: PeerRow[], meta: PeersMeta, outDir: string): Promise<void> {
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, "peers.json"), JSON.stringify({ ...meta, rows }, null, 2) + "\n");
  writeFileSync(join(outDir, "peers.md"), renderPeersMarkdown(rows, meta));
  try {
    await svgToPng(renderPeersSvg(rows, meta), join(outDir, "peers.png"));
  } catch (e) {
    log(`PNG not written: ${(e as Error).message}`);
  }
  log(`wrote ${join(outDir, "peers.md")}, peers.json and peers.png`);
}
