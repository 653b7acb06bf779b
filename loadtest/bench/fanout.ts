// bench:fanout — N WebSocket clients, M msgs/s, through the gateway (JetStream) and through a bare uWS
// publish server in the same run; prints deliveries/s and latency percentiles for both and their ratio.
// Not a test: numbers go to the README. Usage: npm run bench -- fanout [--clients 200] [--rate 500]
//   [--seconds 8] [--procs 2] [--size 64] [--workers 1] [--compression off|shared|both] [--publish-load N]
//   [--centrifuge json,protobuf|none] [--rounds 1]
// --publish-load N: one more gateway row, while N msgs/s are published through the same gateway (HTTP batches of
// 100 to a channel nobody subscribes to) and a single HTTP publish every 50 ms is timed: delivery under publish
// load against bare uWS, and a single publish's latency under that load.
// --compression shared: the gateway runs with COMPRESSION=shared (bare uWS with SHARED_COMPRESSOR, publish
// compress=true) and the clients negotiate permessage-deflate; both: a row pair, off then shared. Each row
// also shows the server's CPU (its process tree, from /proc) per delivery.
// --coalesce MS: one more gateway row with COALESCE=MS and clients that connect with coalesce=1 (PROTOCOL.md
// "Coalesced frames"), and the issue-36 keys in the JSON line: cpuRatioCoalesced, cpuRatioPlain (server CPU per
// delivered message against bare uWS sending one frame per message) and latencyP99CoalescedMs.
// --spacing burst (default) publishes rate/100 messages together every 10 ms, and uWS writes a burst to each
// socket in one syscall; even publishes one message at a time, so a server sending one frame per message
// writes each socket once per message: the cost coalescing removes (bench wire's coalesce run uses even).
// --centrifuge json,protobuf (the default): rows for the Centrifuge client-protocol door (/connection/websocket,
// docs/centrifugo.md) in each format, each on its own gateway, measured in --rounds rounds (order alternating)
// with the /ws row as their baseline: the JSON line's cpuRatioCentrifugeJson and cpuRatioCentrifugeProtobuf
// are the medians over the rounds of the door's CPU per delivery over /ws's in the same round (issue 43: at
// most 1.1). --centrifuge none leaves them out.
// Every row also counts for loss: after its publisher stops and its clients drain, each socket should hold
// every message from the first it got on (delivered / expected, lost; duplicates are reported too).
// Clients use the load tools' lean WebSocket engine (ws clients with permessage-deflate); the Centrifuge door's
// speak subtools/src/clients/centrifuge-wire.ts.
// The issue's size: `npm run bench -- fanout --clients 2000 --procs 4 --rate 500 --coalesce 25 --spacing even --json`
// (2,000 sockets on one channel, 500 msg/s, a 25 ms window; more than a 2-core box can deliver).
import { fork, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { connect } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { fmt, nowUs, percentile, startGatewayProc, startNats, until } from "./common.js";
import { cpuWindow, machineWindow } from "./jetstream/cpu.js";
import { clientMain, DOORS, type Count, type Door } from "./fanout-clients.js";
import { FlagError, std } from "../kit/flags.js";
import { alternate, median, medianIndex } from "../kit/rounds.js";
import { pace, SPACINGS, type Spacing } from "./pace.js";
import { defineBench, KEEP_RUNNING, runBench } from "../kit/main.js";

type Report = { received: number; latUs: number[] };

// --- bare uWS server: the same frames published to a topic by a timer in-process ---
async function bareMain(rate: number, size: number, spacing: Spacing, seconds: number, compress: boolean): Promise<void> {
  const require = createRequire(import.meta.url);
  const uws = require("uWebSockets.js") as typeof import("uWebSockets.js");
  const app = uws.App();
  app.ws("/ws", {
    compression: compress ? uws.SHARED_COMPRESSOR : uws.DISABLED,
    maxBackpressure: 8 << 20,
    message: (ws) => {
      ws.subscribe("bench");
      ws.send('{"op":"ok","id":1}');
    },
  });
  await new Promise<void>((res) =>
    app.listen("127.0.0.1", 0, (t) => {
      process.send!({ type: "port", port: uws.us_socket_local_port(t as never) });
      res();
    }),
  );
  const pad = "x".repeat(size);
  let seq = 0;
  let pacer: { stop(): void } | undefined;
  process.on("message", (m: { type: string }) => {
    if (m.type === "stop") {
      pacer?.stop();
      process.send!({ type: "published", n: seq });
    }
    if (m.type !== "go") return;
    pacer = pace(rate, spacing, (seconds + PUBLISH_SLACK_S) * 1000, () => {
      seq++;
      app.publish(
        "bench",
        `{"op":"msg","channel":"bench","sub":"bench","seq":${seq},"ts":${Date.now()},"data":{"t":${nowUs()},"s":${seq},"x":"${pad}"}}`,
        false,
        compress,
      );
    });
  });
}

async function runClients(url: string, channel: string, clients: number, procs: number, deflate: boolean, door: Door = "native"): Promise<ChildProcess[]> {
  const per = Math.ceil(clients / procs);
  const args = ["--role", "client", "--url", url, "--channel", channel, "--k", String(per), "--door", door, ...(deflate ? ["--deflate"] : [])];
  const children = Array.from({ length: procs }, () => fork(process.argv[1]!, args, { stdio: "inherit" }));
  await Promise.all(children.map((c) => new Promise<void>((res) => c.once("message", () => res()))));
  return children;
}

/** The load of a row: sockets (in `procs` client processes) on one channel, msgs/s of `size` bytes, paced by `spacing`. */
type Shape = { clients: number; rate: number; seconds: number; procs: number; size: number; spacing: Spacing };

/** `cpuPct`: the server's process tree, in % of one core; `machinePct`: every core's busy time, in % of the machine. */
type Result = { deliveriesPerSec: number; lat: number[]; cpuPct: number; machinePct: number; load?: LoadResult; count?: RowCount };

/** A row's no-loss count, after its publisher stopped and the clients drained: every socket's messages from its first on. */
type RowCount = Count & { published: number; lost: number };

/**
 * Asks the clients to count against `published` until every message is in or the count stops growing for
 * `quietMs` (a message still missing then is lost, not late), at most `maxMs`.
 */
async function settle(children: ChildProcess[], published: number, quietMs = 2_000, maxMs = 30_000): Promise<RowCount> {
  const ask = () =>
    Promise.all(
      children.map(
        (c) =>
          new Promise<Count>((res) => {
            const on = (m: Count & { type: string }) => {
              if (m.type !== "count") return;
              c.off("message", on);
              res(m);
            };
            c.on("message", on);
            c.send({ type: "count", published });
          }),
      ),
    ).then((cs) => cs.reduce((a, x) => ({ delivered: a.delivered + x.delivered, expected: a.expected + x.expected, dup: a.dup + x.dup })));
  const t0 = Date.now();
  let last = await ask();
  let since = Date.now();
  while (last.delivered < last.expected && Date.now() - t0 < maxMs && Date.now() - since < quietMs) {
    await new Promise((r) => setTimeout(r, 250));
    const now = await ask();
    if (now.delivered !== last.delivered) since = Date.now();
    last = now;
  }
  return { ...last, published, lost: last.expected - last.delivered };
}

type LoadResult = { offered: number; stored: number; failed: number; singleLatMs: number[] };

/** Publishes `perSec` msgs/s through the gateway in HTTP batches of 100, and times a single publish every 50 ms. */
function publishLoad(port: number, perSec: number): { stop: () => Promise<LoadResult> } {
  const url = `http://127.0.0.1:${port}/v1/publish`;
  const batch = JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ channel: "bench.load", data: { i, x: "y".repeat(64) } })));
  const r: LoadResult = { offered: 0, stored: 0, failed: 0, singleLatMs: [] };
  const inflight = new Set<Promise<void>>();
  const track = (p: Promise<void>) => {
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };
  let owed = 0;
  const tickMs = 10;
  const batches = setInterval(() => {
    owed += (perSec / 100) * (tickMs / 1000);
    for (; owed >= 1; owed--) {
      r.offered += 100;
      track(
        fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: batch }).then(
          async (res) => {
            const items = (await res.json()) as { results?: { seq?: number }[] };
            const ok = items.results?.filter((x) => typeof x.seq === "number").length ?? 0;
            r.stored += ok;
            r.failed += 100 - ok;
          },
          () => void (r.failed += 100),
        ),
      );
    }
  }, tickMs);
  const singles = setInterval(() => {
    const t = performance.now();
    track(
      fetch(`${url}/bench.single`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"single":true}' }).then(
        async (res) => {
          await res.arrayBuffer();
          if (res.status === 201) r.singleLatMs.push(performance.now() - t);
        },
        () => undefined,
      ),
    );
  }, 50);
  return {
    stop: async () => {
      clearInterval(batches);
      clearInterval(singles);
      await Promise.allSettled([...inflight]);
      r.singleLatMs.sort((a, b) => a - b);
      return r;
    },
  };
}

/** Deliveries and latency over `seconds` after a warm-up second, and the CPU of `serverPid`'s process tree meanwhile. */
async function collect(children: ChildProcess[], seconds: number, serverPid: number): Promise<Result> {
  const ask = () =>
    Promise.all(
      children.map(
        (c) =>
          new Promise<Report>((res) => {
            c.once("message", (m: Report) => res(m));
            c.send({ type: "report" });
          }),
      ),
    );
  await new Promise((r) => setTimeout(r, 1_000)); // warm-up second, discarded
  await ask();
  const cpu = cpuWindow([serverPid]);
  const machine = machineWindow();
  const t0 = Date.now();
  await new Promise((r) => setTimeout(r, seconds * 1_000));
  const reps = await ask();
  const cpuPct = cpu.read();
  const machinePct = machine.read();
  const dt = (Date.now() - t0) / 1000;
  const lat = reps.flatMap((r) => r.latUs).sort((a, b) => a - b);
  return { deliveriesPerSec: reps.reduce((a, r) => a + r.received, 0) / dt, lat, cpuPct, machinePct };
}

const BENCH = defineBench("fanout", {
  clients: std("clients", { default: 200, quick: 50 }),
  rate: std("rate", { default: 500, quick: 100 }),
  seconds: std("seconds", { default: 8, quick: 2 }),
  procs: std("procs", { default: 2 }),
  size: std("size", { default: 64 }),
  workers: std("workers", { default: 1 }),
  compression: {
    type: "string",
    default: "off",
    choices: ["off", "shared", "both"],
    help: "permessage-deflate: off, shared (COMPRESSION=shared), or both as row pairs",
  },
  coalesce: { type: "number", min: 0, max: 1_000, default: 0, help: "ms: one more gateway row with COALESCE=ms and clients that read coalesced frames" },
  "publish-load": { type: "number", min: 0, default: 0, help: "one more gateway row while this many msgs/s are published through its HTTP API" },
  spacing: {
    type: "string",
    default: "burst",
    choices: SPACINGS,
    help: "burst: rate/100 messages together every 10 ms (the tables in docs/benchmarks.md); even: each message on its own, 1000/rate ms apart (bench wire's coalesce run)",
  },
  centrifuge: {
    type: "list",
    default: ["json", "protobuf"],
    choices: ["json", "protobuf", "none"],
    help: "rows for the Centrifuge door (/connection/websocket) in these formats, measured in rounds with the /ws row (none: no such rows)",
  },
  rounds: std("rounds", { default: 1, quick: 1 }),
  json: std("json"),
  quick: std("quick"),
  role: { type: "string", default: "main", choices: ["main", "client", "bare"], internal: true, help: "the process's part" },
  url: { type: "string", internal: true, help: "client: the server's URL" },
  channel: { type: "string", internal: true, help: "client: the channel" },
  k: { type: "number", internal: true, help: "client: its sockets" },
  deflate: { type: "boolean", internal: true, help: "client: offer permessage-deflate" },
  compress: { type: "boolean", internal: true, help: "bare: compress" },
  door: { type: "string", default: "native", choices: DOORS, internal: true, help: "client: the door it connects through" },
});

/** A door's rows over the rounds, and its CPU per delivery against the /ws row of the same round. */
type DoorRounds = { door: Door; results: Result[]; ratios: number[] };

/** The /ws row and the Centrifuge door's rows, one gateway each, in rounds whose order alternates. */
async function runDoors(shape: Shape, workers: number, doors: Door[], rounds: number): Promise<DoorRounds[]> {
  const legs: Door[] = ["native", ...doors];
  const out = legs.map((door): DoorRounds => ({ door, results: [], ratios: [] }));
  for (let r = 0; r < rounds; r++) {
    const round = new Map<Door, Result>();
    for (const door of alternate(legs, r)) round.set(door, await runGateway(shape, workers, false, 0, 0, door));
    for (const d of out) {
      d.results.push(round.get(d.door)!);
      d.ratios.push(cpuUsPerDelivery(round.get(d.door)!) / cpuUsPerDelivery(round.get("native")!));
    }
  }
  return out;
}

/** The round a door's table row shows: the one with the median CPU per delivery. */
const medianResult = (d: DoorRounds): Result => d.results[medianIndex(d.results.map(cpuUsPerDelivery))]!;

const DOOR_NAME: Record<Door, string> = {
  native: "/ws",
  "centrifuge-json": "/connection/websocket, JSON",
  "centrifuge-protobuf": "/connection/websocket, Protobuf",
};

runBench(BENCH, async ({ flags: v }) => {
  if (v.role === "client") return clientMain(v.url!, v.channel!, v.k!, v.deflate, v.door).then(() => KEEP_RUNNING);
  if (v.role === "bare") return bareMain(v.rate, v.size, v.spacing as Spacing, v.seconds, v.compress).then(() => KEEP_RUNNING);
  const { clients, rate, seconds, procs, size } = v;
  const shape: Shape = { clients, rate, seconds, procs, size, spacing: v.spacing as Spacing };
  const modes = v.compression === "both" ? [false, true] : [v.compression === "shared"];
  const formats = v.centrifuge.filter((f) => f !== "none");
  if (formats.length > 0 && v.centrifuge.includes("none")) throw new FlagError("--centrifuge none cannot be given with a format");
  const doors = formats.map((f) => `centrifuge-${f}` as Door);

  const rows: { name: string; r: Result }[] = [];
  let doorRounds: DoorRounds[] = [];
  for (const deflate of modes) {
    const tag = deflate ? ", permessage-deflate" : "";
    // Without deflate (which the Centrifuge SDKs do not use here) the /ws row is the doors' baseline, measured in their rounds.
    if (!deflate && doors.length > 0) doorRounds = await runDoors(shape, v.workers, doors, v.rounds);
    rows.push({
      name: `gateway ${doorRounds.length > 0 && !deflate ? "/ws " : ""}(JetStream, ${v.workers} worker${v.workers === 1 ? "" : "s"}${tag})`,
      r: !deflate && doorRounds.length > 0 ? medianResult(doorRounds[0]!) : await runGateway(shape, v.workers, deflate),
    });
    rows.push({ name: `bare uWS publish${tag}`, r: await runBare(shape, deflate) });
  }
  const load = v["publish-load"];
  const coalesced =
    v.coalesce > 0
      ? {
          name: `gateway (JetStream, ${v.workers} worker${v.workers === 1 ? "" : "s"}, coalesce ${v.coalesce} ms)`,
          r: await runGateway(shape, v.workers, false, 0, v.coalesce),
        }
      : undefined;
  const loaded =
    load > 0
      ? {
          name: `gateway (JetStream, ${v.workers} worker${v.workers === 1 ? "" : "s"}) while ${fmt(load)} msgs/s are published through it`,
          r: await runGateway(shape, v.workers, false, load),
        }
      : undefined;

  const counted = (r: Result) => (r.count ? `${fmt(r.count.delivered)} / ${fmt(r.count.expected)} | ${fmt(r.count.lost)}` : "– | –");
  const row = (name: string, r: Result) =>
    `| ${name} | ${fmt(r.deliveriesPerSec)} | ${fmt(percentile(r.lat, 50) / 1000, 2)} | ${fmt(percentile(r.lat, 99) / 1000, 2)} | ${fmt(percentile(r.lat, 99.9) / 1000, 2)} | ${fmt(r.lat.at(-1)! / 1000, 2)} | ${fmt(r.cpuPct)} | ${fmt(cpuUsPerDelivery(r), 2)} | ${fmt(r.machinePct)} | ${counted(r)} |`;
  const doorRows = doorRounds
    .slice(1)
    .map((d) => ({ name: `gateway ${DOOR_NAME[d.door]} (JetStream, ${v.workers} worker${v.workers === 1 ? "" : "s"})`, r: medianResult(d) }));
  const expected = clients * rate;
  console.log(
    `\nbench:fanout — ${clients} clients × ${rate} msg/s (${fmt(expected)} deliveries/s offered, ${v.spacing} spacing), ${size} B payload, ${seconds} s, ${procs} client processes`,
  );
  console.log(
    "| server | deliveries/s | p50 ms | p99 ms | p99.9 ms | max ms | server CPU % | CPU µs/delivery | machine busy % | delivered / expected | lost |\n|---|---|---|---|---|---|---|---|---|---|---|",
  );
  for (const x of rows) console.log(row(x.name, x.r));
  for (const x of doorRows) console.log(row(x.name, x.r));
  if (coalesced) console.log(row(coalesced.name, coalesced.r));
  if (loaded) console.log(row(loaded.name, loaded.r));
  for (let i = 0; i < rows.length; i += 2)
    console.log(
      `ratio gateway/bare deliveries/s${modes[i / 2] ? " (deflate)" : ""}: ${(rows[i]!.r.deliveriesPerSec / rows[i + 1]!.r.deliveriesPerSec).toFixed(3)} (target >= 0.90)`,
    );
  if (loaded?.r.load) {
    const l = loaded.r.load;
    console.log(
      `ratio gateway under publish load/bare deliveries/s: ${(loaded.r.deliveriesPerSec / rows[1]!.r.deliveriesPerSec).toFixed(3)} (target >= 0.90); published ${fmt(l.stored)} of ${fmt(l.offered)} offered (${fmt(l.failed)} failed); single HTTP publish under that load p50 ${fmt(percentile(l.singleLatMs, 50), 2)} ms, p99 ${fmt(percentile(l.singleLatMs, 99), 2)} ms (${l.singleLatMs.length} timed)`,
    );
  }
  const doorRatios = Object.fromEntries(
    doorRounds.slice(1).map((d) => [d.door === "centrifuge-json" ? "cpuRatioCentrifugeJson" : "cpuRatioCentrifugeProtobuf", median(d.ratios)]),
  );
  for (const d of doorRounds.slice(1))
    console.log(
      `ratio ${DOOR_NAME[d.door]}/ws CPU per delivery: ${median(d.ratios).toFixed(3)} (target <= 1.1; median of ${d.ratios.length} round${d.ratios.length === 1 ? "" : "s"}: ${d.ratios.map((x) => x.toFixed(3)).join(", ")})`,
    );
  if (rows.length === 4)
    console.log(
      `deflate costs the gateway ${fmt(cpuUsPerDelivery(rows[2]!.r) - cpuUsPerDelivery(rows[0]!.r), 2)} µs CPU per delivery (${(cpuUsPerDelivery(rows[2]!.r) / cpuUsPerDelivery(rows[0]!.r)).toFixed(2)}x)`,
    );
  const bareCpu = cpuUsPerDelivery(rows[1]!.r);
  const issue36 = coalesced
    ? {
        cpuRatioCoalesced: cpuUsPerDelivery(coalesced.r) / bareCpu,
        cpuRatioPlain: cpuUsPerDelivery(rows[0]!.r) / bareCpu,
        latencyP99CoalescedMs: percentile(coalesced.r.lat, 99) / 1000,
      }
    : undefined;
  // A row that delivered less than it was offered measured a backlog, not a rate: its CPU per delivery and
  // latency describe a saturated machine (bigger writes, fewer wake-ups), and a ratio built on it means nothing.
  const behind = [...rows, ...doorRows, ...(coalesced ? [coalesced] : [])].filter((x) => x.r.deliveriesPerSec < KEPT_UP * expected).map((x) => x.name);
  const losing = [...rows, ...doorRows, ...(coalesced ? [coalesced] : []), ...(loaded ? [loaded] : [])].filter(
    (x) => (x.r.count?.lost ?? 0) !== 0 || (x.r.count?.dup ?? 0) > 0,
  );
  for (const x of losing)
    console.log(`LOSS: ${x.name} lost ${fmt(x.r.count!.lost)} and repeated ${fmt(x.r.count!.dup)} of ${fmt(x.r.count!.expected)} deliveries`);
  if (behind.length > 0)
    console.log(
      `NOT VALID: ${behind.join("; ")} delivered less than ${KEPT_UP * 100} % of the ${fmt(expected)} deliveries/s offered (the machine could not keep up)`,
    );
  if (issue36)
    console.log(
      `coalesce ${v.coalesce} ms: CPU per delivery ${issue36.cpuRatioCoalesced.toFixed(3)}x bare uWS (target <= 0.5), window off ${issue36.cpuRatioPlain.toFixed(3)}x (about 1.1); p99 ${fmt(issue36.latencyP99CoalescedMs, 2)} ms (target <= ${v.coalesce + 15})`,
    );
  if (v.json)
    console.log(
      JSON.stringify({
        clients,
        rate,
        size,
        rows: [...rows, ...doorRows, ...(coalesced ? [coalesced] : [])].map((x) => ({
          name: x.name,
          deliveriesPerSec: x.r.deliveriesPerSec,
          cpuPct: x.r.cpuPct,
          cpuUsPerDelivery: cpuUsPerDelivery(x.r),
          machinePct: x.r.machinePct,
          latencyP99Ms: percentile(x.r.lat, 99) / 1000,
          ...(x.r.count ? { delivered: x.r.count.delivered, expected: x.r.count.expected, lost: x.r.count.lost, duplicates: x.r.count.dup } : {}),
        })),
        ...doorRatios,
        ...issue36,
        behind,
      }),
    );
});

/** A row's publisher stops by itself this long after its measured seconds (warm-up and reports fit in it). */
const PUBLISH_SLACK_S = 5;

/** The share of the offered deliveries a row must reach for its numbers to count. */
const KEPT_UP = 0.95;

const cpuUsPerDelivery = (r: Result): number => (r.deliveriesPerSec > 0 ? (r.cpuPct / 100 / r.deliveriesPerSec) * 1e6 : NaN);

/** The path a door's clients connect to. */
const DOOR_PATH: Record<Door, string> = { native: "/ws", "centrifuge-json": "/connection/websocket", "centrifuge-protobuf": "/connection/websocket" };

async function runGateway(shape: Shape, workers: number, deflate: boolean, publishPerSec = 0, coalesceMs = 0, door: Door = "native"): Promise<Result> {
  const nats = await startNats();
  const gw = await startGatewayProc(
    nats.url,
    workers,
    deflate ? ["--compression", "shared"] : [],
    undefined,
    coalesceMs > 0 ? { COALESCE: `${coalesceMs}ms` } : undefined,
  );
  const url = `ws://127.0.0.1:${gw.port}${DOOR_PATH[door]}${coalesceMs > 0 ? "?coalesce=1" : ""}`;
  const gwKids = await runClients(url, "bench.fanout", shape.clients, shape.procs, deflate, door);
  const nc = await connect({ servers: nats.url });
  const js = jetstream(nc);
  const pad = "x".repeat(shape.size);
  const enc = new TextEncoder();
  let s = 0;
  const publishes = new Set<Promise<unknown>>();
  let failed = 0;
  const pacer = pace(shape.rate, shape.spacing, (shape.seconds + PUBLISH_SLACK_S) * 1000, () => {
    const p = js.publish("ev.bench.fanout", enc.encode(`{"t":${nowUs()},"s":${++s},"x":"${pad}"}`)).catch(() => void failed++);
    publishes.add(p);
    void p.finally(() => publishes.delete(p));
  });
  const loader = publishPerSec > 0 ? publishLoad(gw.port, publishPerSec) : undefined;
  const g = await collect(gwKids, shape.seconds, gw.proc.pid!);
  if (loader) g.load = await loader.stop();
  pacer.stop();
  await Promise.allSettled([...publishes]);
  if (failed > 0) console.error(`bench:fanout: ${failed} of ${s} JetStream publishes failed (counted as lost)`);
  g.count = await settle(gwKids, s);
  for (const c of gwKids) c.send({ type: "exit" });
  await nc.close();
  gw.proc.kill("SIGTERM");
  nats.proc.kill("SIGTERM");
  await until(() => gw.proc.exitCode !== null || undefined, 15_000, "gateway exit");
  return g;
}

/** Bare uWS, same clients, same rate. */
async function runBare(shape: Shape, deflate: boolean): Promise<Result> {
  const args = [
    "--role",
    "bare",
    "--rate",
    String(shape.rate),
    "--size",
    String(shape.size),
    "--spacing",
    shape.spacing,
    "--seconds",
    String(shape.seconds),
    ...(deflate ? ["--compress"] : []),
  ];
  const bare = fork(process.argv[1]!, args, { stdio: "inherit" });
  const port = await new Promise<number>((res) => bare.once("message", (m: { port: number }) => res(m.port)));
  const bareKids = await runClients(`ws://127.0.0.1:${port}/ws`, "bench", shape.clients, shape.procs, deflate);
  bare.send({ type: "go" });
  const b = await collect(bareKids, shape.seconds, bare.pid!);
  const published = await new Promise<number>((res) => {
    bare.once("message", (m: { n: number }) => res(m.n));
    bare.send({ type: "stop" });
  });
  b.count = await settle(bareKids, published);
  for (const c of bareKids) c.send({ type: "exit" });
  bare.kill("SIGKILL");
  return b;
}
