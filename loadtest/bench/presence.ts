// bench:presence — N members enter one channel's presence over several client processes (paced joins), W
// watcher sockets (presence "watch", on whichever workers SO_REUSEPORT gives them) time every join and
// leave; then the members leave. Reported: join → join-frame and unsub → leave-frame propagation (p50/p99/max
// over every watcher × member pair), the sub's ok latency, the member list's latency (presence op and HTTP),
// CPU of the gateway (primary + workers) and of nats-server per phase (joins, steady refreshes, leaves), and
// the memory the presence bucket costs nats-server.
// Usage: npm run bench -- presence [--members 10000 | --quick] [--watchers 4] [--procs auto] [--rate 1000]
//   [--ttl 30s] [--steady 30] [--workers 2] [--members-mode member|true] [--no-write]
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import WebSocket from "ws";
import { fmt } from "./common.js";
import { std } from "../kit/flags.js";
import { defineBench, KEEP_RUNNING, runBench } from "../kit/main.js";
import { appendSection, reportPath } from "../kit/results.js";
import { startNatsServer } from "#testkit/nats-server.js";
import {
  clientLifecycle,
  closeAll,
  destinationsFor,
  forkClient,
  gatewayPids,
  gatewayWarnings,
  groupStat,
  loadAvg,
  now,
  openSockets,
  pcts,
  procStat,
  revision,
  scrapeMetrics,
  sleep,
  startScaleGateway,
  stopClients,
  type ClientProc,
  type Pcts,
} from "./scale-kit.js";

const CHANNEL = "bench.presence.room";

// ---------------------------------------------------------------- client process

type Open = { type: "open"; port: number; count: number; base: number; dests: number };
type Join = { type: "join"; rate: number; mode: true | "member" };
type Leave = { type: "leave"; rate: number };
type Joined = { type: "joined"; rows: [string, number, number][]; errors: number; errSamples: string[] };
type Left = { type: "left"; rows: [string, number][] };

/** Sends `count` actions at `rate` per second (10 ms ticks). */
async function paced(count: number, rate: number, act: (k: number) => void): Promise<void> {
  const t0 = now();
  let sent = 0;
  while (sent < count) {
    const due = Math.min(count, Math.floor(((now() - t0) / 1000) * rate) + 1);
    for (; sent < due; sent++) act(sent);
    if (sent < count) await sleep(10);
  }
}

async function clientMain(): Promise<void> {
  let sockets: (WebSocket | undefined)[] = [];
  clientLifecycle(() => closeAll(sockets));
  let tSub = new Float64Array(0);
  let tOk = new Float64Array(0);
  let ids: string[] = [];
  let settled = 0;
  let errors = 0;
  const errSamples: string[] = [];
  process.on("message", (m: { type: string }) => {
    void (async () => {
      if (m.type === "open") {
        const o = m as Open;
        tSub = new Float64Array(o.count);
        tOk = new Float64Array(o.count);
        ids = new Array<string>(o.count).fill("");
        const r = await openSockets({
          port: o.port,
          count: o.count,
          base: o.base,
          dests: o.dests,
          concurrency: 64,
          onOpen: (ws, k) =>
            ws.on("message", (d: Buffer) => {
              const f = JSON.parse(d.toString()) as { op: string; id?: number; client?: string };
              if (f.id !== 1) return;
              if (f.op === "ok") {
                tOk[k] = now();
                ids[k] = f.client ?? "";
              } else {
                errors++;
                if (errSamples.length < 5) errSamples.push(d.toString().slice(0, 300));
              }
              settled++;
            }),
          onUnexpectedClose: () => errors++,
        });
        sockets = r.sockets;
        process.send!({ type: "opened", opened: r.sockets.filter(Boolean).length, failed: r.failed, failures: r.failures });
      } else if (m.type === "join") {
        const j = m as Join;
        await paced(sockets.length, j.rate, (k) => {
          tSub[k] = now();
          sockets[k]?.send(JSON.stringify({ op: "sub", id: 1, channel: CHANNEL, presence: j.mode }));
        });
        const deadline = now() + 120_000;
        while (settled < sockets.filter(Boolean).length && now() < deadline) await sleep(20);
        const rows: [string, number, number][] = [];
        for (let k = 0; k < sockets.length; k++) if (ids[k]) rows.push([ids[k]!, tSub[k]!, tOk[k]!]);
        process.send!({ type: "joined", rows, errors, errSamples } satisfies Joined);
      } else if (m.type === "leave") {
        const l = m as Leave;
        const rows: [string, number][] = [];
        await paced(sockets.length, l.rate, (k) => {
          if (!ids[k]) return;
          rows.push([ids[k]!, now()]);
          sockets[k]?.send(JSON.stringify({ op: "unsub", id: 2, channel: CHANNEL }));
        });
        process.send!({ type: "left", rows } satisfies Left);
      }
    })();
  });
  process.send!({ type: "ready" });
}

// ---------------------------------------------------------------- watchers

type Watcher = { ws: WebSocket; joins: Map<string, number>; leaves: Map<string, number>; replies: Map<number, { t: number; f: Record<string, unknown> }> };

async function openWatcher(port: number): Promise<Watcher> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { perMessageDeflate: false });
  const w: Watcher = { ws, joins: new Map(), leaves: new Map(), replies: new Map() };
  ws.on("message", (d: Buffer) => {
    const t = now();
    const f = JSON.parse(d.toString()) as Record<string, unknown> & { op: string; client?: string; id?: number };
    if (f.op === "join") w.joins.set(f.client!, t);
    else if (f.op === "leave") w.leaves.set(f.client!, t);
    else if (typeof f.id === "number") w.replies.set(f.id, { t, f });
  });
  await new Promise<void>((res, rej) => {
    ws.once("open", () => res());
    ws.once("error", rej);
  });
  return w;
}

async function ask(w: Watcher, id: number, frame: object, timeoutMs = 30_000): Promise<{ ms: number; f: Record<string, unknown> }> {
  const t0 = now();
  w.ws.send(JSON.stringify({ ...frame, id }));
  const deadline = t0 + timeoutMs;
  while (!w.replies.has(id)) {
    if (now() > deadline) throw new Error(`no reply to ${JSON.stringify(frame)}`);
    await sleep(2);
  }
  const r = w.replies.get(id)!;
  return { ms: r.t - t0, f: r.f };
}

// ---------------------------------------------------------------- main

type Phase = { name: string; wallS: number; gwCpuS: number; natsCpuS: number };

const BENCH = defineBench("presence", {
  members: { type: "number", integer: true, min: 1, default: 10_000, quick: 300, help: "presence members, one socket each" },
  watchers: { type: "number", integer: true, min: 0, default: 4, help: "sockets watching the channel's presence" },
  procs: std("procs", { help: "client processes (default: one per 2,500 members, at least 2)" }),
  rate: std("rate", { default: 1_000, quick: 300, help: "joins per second" }),
  ttl: { type: "string", default: "30s", quick: "3s", help: "--presence-ttl of the gateway (the steady phase sees refreshes every third of it)" },
  steady: { type: "number", min: 0, default: 30, quick: 5, help: "seconds of the steady phase" },
  workers: std("workers", { default: 2 }),
  "members-mode": { type: "string", default: "member", choices: ["member", "true"], help: "the members' own presence option" },
  out: std("out", { help: "the results file a run's section is appended to (default loadtest/results/presence.md)" }),
  "no-write": std("no-write"),
  quick: std("quick"),
  client: { type: "boolean", internal: true, help: "a client process" },
});

runBench(BENCH, async ({ flags: a }) => {
  if (a.client) return clientMain().then(() => KEEP_RUNNING);
  const { members, watchers, rate, workers } = a;
  const procs = a.procs ?? Math.max(2, Math.ceil(members / 2_500));
  const steadyS = a.steady;
  const mode = a["members-mode"] === "true" ? true : "member";
  const results = reportPath(a, "presence.md");
  const started = new Date().toISOString();
  console.log(
    `bench:presence — ${members} members over ${procs} processes at ${rate}/s, ${watchers} watchers, ${workers} workers, ttl ${a.ttl}, members' presence ${JSON.stringify(mode)}`,
  );

  const nats = await startNatsServer();
  const natsPid = nats.process.pid!;
  const natsRssBefore = procStat(natsPid)?.rssBytes ?? 0;
  const gw = await startScaleGateway({ natsUrl: nats.url, workers, extra: ["--presence-max-members", String(members + 100), "--presence-ttl", a.ttl] }).catch(
    async (e: unknown) => {
      await nats.stop();
      throw e;
    },
  );
  const clients: ClientProc[] = [];
  const ws: Watcher[] = [];
  const nc = await connect({ servers: nats.url });
  try {
    const gwPids = gatewayPids(gw);
    const phases: Phase[] = [];
    const measure = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
      const [g0, n0, t0] = [groupStat(gwPids).cpuSec, procStat(natsPid)?.cpuSec ?? 0, now()];
      const r = await fn();
      phases.push({ name, wallS: (now() - t0) / 1000, gwCpuS: groupStat(gwPids).cpuSec - g0, natsCpuS: (procStat(natsPid)?.cpuSec ?? 0) - n0 });
      return r;
    };

    for (let i = 0; i < watchers; i++) {
      const w = await openWatcher(gw.port);
      const r = await ask(w, 1, { op: "sub", channel: CHANNEL, presence: "watch" });
      if (r.f.op !== "ok") throw new Error(`watcher sub failed: ${JSON.stringify(r.f)}`);
      ws.push(w);
    }
    const script = import.meta.filename;
    const dests = destinationsFor(members);
    const per = Math.ceil(members / procs);
    for (let p = 0; p < procs; p++) clients.push(forkClient(script, ["--client"]));
    await Promise.all(clients.map((c) => c.ask({}, "ready", 30_000)));
    const opened = await Promise.all(
      clients.map((c, p) =>
        c.ask<{ opened: number; failed: number; failures: string[] }>(
          { type: "open", port: gw.port, count: Math.max(0, Math.min(per, members - p * per)), base: p * per, dests },
          "opened",
          300_000,
        ),
      ),
    );
    const failedOpen = opened.reduce((s, o) => s + o.failed, 0);
    if (failedOpen > 0)
      console.log(
        `  ${failedOpen} sockets failed to open: ${opened
          .flatMap((o) => o.failures)
          .slice(0, 3)
          .join("; ")}`,
      );

    // Idle: the same processes and sockets before anyone joins (the baseline of the steady phase).
    await measure("idle (sockets open, no member)", () => sleep(steadyS * 1000));

    // Joins.
    const joined = await measure("joins", async () => {
      const rs = await Promise.all(clients.map((c) => c.ask<Joined>({ type: "join", rate: rate / procs, mode }, "joined", 600_000)));
      const all = rs.flatMap((r) => r.rows);
      const deadline = now() + 120_000;
      while (now() < deadline && !ws.every((w) => all.every(([id]) => w.joins.has(id)))) await sleep(50);
      return { rows: all, errors: rs.reduce((s, r) => s + r.errors, 0), errSamples: rs.flatMap((r) => r.errSamples) };
    });
    const joinLat: number[] = [];
    let missingJoins = 0;
    for (const w of ws)
      for (const [id, tSub] of joined.rows) {
        const t = w.joins.get(id);
        if (t === undefined) missingJoins++;
        else joinLat.push(t - tSub);
      }
    const okLat = joined.rows.map(([, tSub, tOk]) => tOk - tSub);

    // Steady: members stay, refreshes run.
    const refreshesBefore = (await scrapeMetrics(gw.url)).fanout_presence_refresh_seconds_count ?? 0;
    await measure("steady", () => sleep(steadyS * 1000));
    const m = await scrapeMetrics(gw.url);
    const refreshes = (m.fanout_presence_refresh_seconds_count ?? 0) - refreshesBefore;
    const jsm = await jetstreamManager(nc);
    const kv = (await jsm.streams.info("KV_PRESENCE")).state;
    const natsRss = procStat(natsPid)?.rssBytes ?? 0;
    const gwRss = groupStat(gwPids).rssBytes;

    // The member list.
    const listWs = await ask(ws[0]!, 2, { op: "presence", channel: CHANNEL });
    const h0 = now();
    const http = (await (await fetch(`${gw.url}/v1/channels/${CHANNEL}/presence`)).json()) as { members: unknown[]; truncated: boolean };
    const httpMs = now() - h0;

    // Leaves.
    const left = await measure("leaves", async () => {
      const rs = await Promise.all(clients.map((c) => c.ask<Left>({ type: "leave", rate: rate / procs }, "left", 600_000)));
      const all = rs.flatMap((r) => r.rows);
      const deadline = now() + 120_000;
      while (now() < deadline && !ws.every((w) => all.every(([id]) => w.leaves.has(id)))) await sleep(50);
      return all;
    });
    const leaveLat: number[] = [];
    let missingLeaves = 0;
    for (const w of ws)
      for (const [id, tSend] of left) {
        const t = w.leaves.get(id);
        if (t === undefined) missingLeaves++;
        else leaveLat.push(t - tSend);
      }
    const duplicates = ws.reduce((s, w) => s + Math.max(0, w.joins.size - joined.rows.length), 0);

    const warnings = gatewayWarnings(gw, [/AUTHENTICATION IS OFF/]);
    const report = render({
      started,
      members,
      procs,
      rate,
      watchers,
      workers,
      ttl: a.ttl,
      steadyS,
      mode,
      failedOpen,
      joinedCount: joined.rows.length,
      joinErrors: joined.errors,
      errSamples: joined.errSamples,
      join: pcts(joinLat),
      ok: pcts(okLat),
      leave: pcts(leaveLat),
      missingJoins,
      missingLeaves,
      duplicates,
      phases,
      refreshes,
      kvBytes: kv.bytes,
      kvMsgs: kv.messages,
      natsRssDelta: natsRss - natsRssBefore,
      natsRss,
      gwRss,
      listWsMs: listWs.ms,
      listWsCount: (listWs.f.members as unknown[] | undefined)?.length ?? 0,
      listTruncated: listWs.f.truncated === true,
      httpMs,
      httpCount: http.members.length,
      warnings,
    });
    console.log(report);
    if (results) appendSection(results, "# bench:presence results\n\nAppended by `npm run bench -- presence`; newest last.", report);
  } finally {
    for (const w of ws) w.ws.terminate();
    await stopClients(clients);
    await nc.close();
    await gw.stop();
    await nats.stop();
  }
});

type Report = {
  started: string;
  members: number;
  procs: number;
  rate: number;
  watchers: number;
  workers: number;
  ttl: string;
  steadyS: number;
  mode: true | "member";
  failedOpen: number;
  joinedCount: number;
  joinErrors: number;
  errSamples: string[];
  join: Pcts;
  ok: Pcts;
  leave: Pcts;
  missingJoins: number;
  missingLeaves: number;
  duplicates: number;
  phases: Phase[];
  refreshes: number;
  kvBytes: number;
  kvMsgs: number;
  natsRssDelta: number;
  natsRss: number;
  gwRss: number;
  listWsMs: number;
  listWsCount: number;
  listTruncated: boolean;
  httpMs: number;
  httpCount: number;
  warnings: { msg: string; count: number }[];
};

function render(r: Report): string {
  const ms = (p: Pcts) => `${fmt(p.p50, 1)} / ${fmt(p.p99, 1)} / ${fmt(p.max, 1)}`;
  const mib = (b: number) => fmt(b / 1_048_576, 1);
  const lines = [
    `## ${r.started} — ${fmt(r.members)} members, ${r.watchers} watchers, ${r.workers} workers${r.members < 10_000 ? " (quick)" : ""}`,
    "",
    `${revision()}; load average ${loadAvg()}; ${r.procs} client processes, joins and leaves paced at ${fmt(r.rate)}/s; PRESENCE_TTL ${r.ttl}` +
      ` (refresh every third); members subscribed with presence ${JSON.stringify(r.mode)}; watchers with "watch".`,
    "",
    "| measure | value |",
    "|---|---:|",
    `| members joined (ok) / sockets failed to open / sub errors | ${fmt(r.joinedCount)} / ${r.failedOpen} / ${r.joinErrors} |`,
    `| join → join frame at a watcher, ms p50 / p99 / max (${fmt(r.join.n)} pairs) | ${ms(r.join)} |`,
    `| sub → ok, ms p50 / p99 / max | ${ms(r.ok)} |`,
    `| unsub → leave frame at a watcher, ms p50 / p99 / max (${fmt(r.leave.n)} pairs) | ${ms(r.leave)} |`,
    `| joins / leaves missing at watchers, joins announced twice | ${r.missingJoins} / ${r.missingLeaves} / ${r.duplicates} |`,
    `| member list: presence op, ms (members, truncated) | ${fmt(r.listWsMs, 1)} (${fmt(r.listWsCount)}, ${r.listTruncated}) |`,
    `| member list: HTTP GET, ms (members) | ${fmt(r.httpMs, 1)} (${fmt(r.httpCount)}) |`,
    `| presence bucket: entries, bytes (per entry) | ${fmt(r.kvMsgs)}, ${fmt(r.kvBytes / 1024)} KiB (${fmt(r.kvBytes / Math.max(1, r.kvMsgs))} B) |`,
    `| nats-server RSS growth since start (now) | ${mib(r.natsRssDelta)} MiB (${mib(r.natsRss)} MiB) |`,
    `| gateway RSS, primary + workers | ${mib(r.gwRss)} MiB |`,
    `| refresh rounds in the steady phase (all workers; each rewrites every entry of its worker) | ${fmt(r.refreshes)} |`,
  ];
  for (const p of r.phases) {
    const per =
      p.name === "steady" || p.name.startsWith("idle")
        ? ""
        : `; per member: gateway ${fmt((p.gwCpuS * 1e6) / r.members)} µs, nats-server ${fmt((p.natsCpuS * 1e6) / r.members)} µs`;
    lines.push(
      `| CPU, ${p.name} (${fmt(p.wallS, 1)} s): gateway ${fmt((p.gwCpuS / p.wallS) * 100, 1)} %, nats-server ${fmt((p.natsCpuS / p.wallS) * 100, 1)} % of a core${per} | ${fmt(p.gwCpuS, 2)} s / ${fmt(p.natsCpuS, 2)} s |`,
    );
  }
  if (r.errSamples.length) lines.push("", `Sub errors (samples): ${r.errSamples.map((s) => `\`${s}\``).join(", ")}`);
  if (r.warnings.length) lines.push("", `Gateway warnings: ${r.warnings.map((w) => `${w.msg} ×${w.count}`).join("; ")}`);
  return lines.join("\n");
}
