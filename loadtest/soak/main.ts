// npm run bench -- soak (alias npm run soak) [--minutes N --seed S --out DIR --warmup M --interval S --quick]; --help lists the flags
// A soak run: one gateway (2 workers) on the test kit's nats-server, with the hooks pointed at the test kit's
// hook backend, under steady churn well below capacity (churn.ts) for N minutes. Every few seconds it samples
// each worker's RSS, heap, handles, open fds, event-loop lag and table sizes, the nats-server's RSS and the
// stream's consumer count (sampler.ts); then fits a trend to every series after warm-up and checks every
// table against its bound (verdict.ts). Writes DIR/soak.md and DIR/soak.json, prints one JSON line, exits 1
// when a series grows or a table passes its bound, 2 when the run itself failed or a flag is bad. Every process it starts is
// stopped at the end, on failure and on Ctrl-C; the run has a hard deadline.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, childPids, type GatewayHandle } from "#testkit/gateway.js";
import { HookBackend } from "#testkit/hook-backend.js";
import { MAX_IP_ENTRIES } from "../../gateway/src/limits/admission.js";
import { Churn, CHANNELS, DURABLES, ROOMS, USERS, WILDCARDS, userOf, type ChurnOptions } from "./churn.js";
import { takeSample, type Sample } from "./sampler.js";
import { judge } from "./verdict.js";
import { markdown } from "./report.js";
import { guarded } from "../bench/common.js";
import { std, type FlagValues } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { reportPath } from "../kit/results.js";

const STREAM = "FANOUT_CHANNELS";
const HOOK_CACHE_SIZE = 200;
const REPLAY_CACHE_BYTES = 16 * 1_048_576;

type Args = { minutes: number; seed: number; out: string | undefined; warmupS: number; intervalS: number; workers: number; ips: number };

const BENCH = defineBench("soak", {
  quick: std("quick", { help: "the 3-minute run npm test makes (warm-up 1.5 min, a sample every 3 s); writes no report unless --out is given" }),
  minutes: { type: "number", min: 0.1, default: 60, quick: 3, help: "how long the churn runs (min)" },
  seed: { type: "number", integer: true, min: 1, help: "the clients' choices; the same seed makes the same run (default: from the clock)" },
  warmup: { type: "number", min: 0.01, quick: 1.5, help: "minutes of warm-up left out of the trends (default a quarter of the run, at most 10)" },
  interval: { type: "number", min: 0.1, quick: 3, help: "seconds between samples (default about 240 samples, one every 2 to 15 s)" },
  workers: std("workers", { default: 2 }),
  ips: { type: "number", integer: true, min: 1, default: 48, help: "loopback addresses the clients come from" },
  out: std("out", { help: "the directory soak.md and soak.json go to (default loadtest/results)" }),
  "no-write": std("no-write", { help: "print the summary line only; write no report" }),
});

function toArgs(v: FlagValues<typeof BENCH.flags>): Args {
  const { minutes } = v;
  return {
    minutes,
    seed: v.seed ?? Date.now() % 1_000_000,
    out: reportPath(v, "."),
    // Warm-up: JIT, caches and pools filling up; a quarter of the run, at most 10 minutes.
    warmupS: (v.warmup ?? Math.min(10, minutes / 4)) * 60,
    // About 240 samples in a run, one every 2 to 15 s.
    intervalS: v.interval ?? Math.min(15, Math.max(2, Math.round((minutes * 60) / 240))),
    workers: v.workers,
    ips: v.ips,
  };
}

const say = (s: string) => process.stderr.write(`soak: ${s}\n`);
const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The most each table may hold: the gateway's configured bound, or what this workload can put in it. */
function boundsFor(a: Args, churn: ChurnOptions, baseConsumers: number): Record<string, number> {
  const presenceSlots = Math.ceil(churn.wsSlots / 4) + 2; // + leaves not yet written
  return {
    ws_sockets: churn.wsSlots + 1 + 4, // subscriber slots, the publisher, closes not yet seen
    sse_streams: churn.sseSlots + 4,
    hub_feeds: CHANNELS.length + ROOMS.length + WILDCARDS.length,
    replay_cache_bytes: REPLAY_CACHE_BYTES,
    presence_channels: ROOMS.length,
    presence_own: presenceSlots,
    presence_unremoved: presenceSlots,
    ip_table_entries: Math.min(a.ips, MAX_IP_ENTRIES),
    read_limit_ips: a.ips,
    read_limit_users: USERS,
    publish_limit_entries: a.ips + USERS, // publishers: users the connect hook names, or addresses
    hook_cache_connect: HOOK_CACHE_SIZE,
    hook_cache_subscribe: HOOK_CACHE_SIZE,
    consumers: baseConsumers + DURABLES.length * USERS,
  };
}

/** Loopback source addresses (all of 127.0.0.0/8 reaches the gateway's 127.0.0.1 on Linux). */
const ipsOf = (n: number) => Array.from({ length: n }, (_, i) => `127.0.${1 + Math.floor(i / 200)}.${1 + (i % 200)}`);

async function run(a: Args): Promise<number> {
  const t0 = Date.now();
  let nats: NatsServerHandle | undefined;
  let gw: GatewayHandle | undefined;
  let hooks: HookBackend | undefined;
  let nc: NatsConnection | undefined;
  let churn: Churn | undefined;
  const cleanup = async () => {
    await churn?.stop().catch(() => undefined);
    await nc?.close().catch(() => undefined);
    if (gw) {
      const workers = gw.process.pid ? await childPids(gw.process.pid) : [];
      await gw.stop("SIGTERM").catch(() => undefined);
      for (const p of workers)
        try {
          process.kill(p, "SIGKILL");
        } catch {
          /* gone */
        }
    }
    await hooks?.stop().catch(() => undefined);
    await nats?.stop().catch(() => undefined);
  };
  return guarded(say, (a.minutes * 60 + 180) * 1000, cleanup, async () => {
    nats = await startNatsServer();
    hooks = await HookBackend.start();
    // The connect hook names a user per source address (durables, read limits and subscribe answers are per
    // user); the subscribe hook allows everything. Both answers are cached by the gateway.
    const h = hooks;
    h.answer = (c) => {
      // The churn subscribes to patterns too: a subscribe hook now allows a pattern only when it says so.
      if (c.path !== "/connect") return { body: { allow: true, pattern: true } };
      return { body: { allow: true, user: userOf(String(c.body.ip ?? "")) } };
    };
    gw = await startGateway({
      natsUrl: nats.url,
      workers: a.workers,
      logLevel: "info", // the kit waits for the "gateway ready" line
      args: [
        "--connect-hook-url",
        hooks.url("/connect"),
        "--subscribe-hook-url",
        hooks.url("/subscribe"),
        "--hook-cache-size",
        String(HOOK_CACHE_SIZE),
        "--durable-ack-wait",
        "5s",
        "--shutdown-timeout",
        "5s",
      ],
      env: { REPLAY_CACHE_BYTES: String(REPLAY_CACHE_BYTES) },
    });
    nc = await connect({ servers: nats.url, name: "soak-sampler" });
    const jsm = await jetstreamManager(nc);
    const churnOpts: ChurnOptions = {
      url: gw.url,
      seed: a.seed,
      ips: ipsOf(a.ips),
      wsSlots: 24,
      sseSlots: 4,
      wsPubRate: 8,
      httpPubRate: 5,
      readRate: 4,
      sessionMs: [2_000, 15_000],
    };
    // Consumers the gateway keeps before any client came (the bound adds the workload's durables).
    const baseConsumers = (await jsm.streams.info(STREAM)).state.consumer_count;
    const bounds = boundsFor(a, churnOpts, baseConsumers);
    say(`seed ${a.seed}, ${a.minutes} min, warm-up ${a.warmupS} s, a sample every ${a.intervalS} s; gateway ${gw.url}, nats ${nats.url}`);
    churn = new Churn(churnOpts);
    const start = Date.now();
    churn.start();
    const targets = { metricsUrl: gw.metricsUrl, primaryPid: gw.process.pid!, natsPid: nats.process.pid!, jsm, stream: STREAM };
    const samples: Sample[] = [];
    let sampleErrors = 0;
    const endAt = start + a.minutes * 60_000;
    for (let i = 0; ; i++) {
      const at = start + i * a.intervalS * 1000;
      if (at > endAt) break;
      if (at > Date.now()) await delay(at - Date.now());
      if (gw.process.exitCode !== null) throw new Error(`the gateway exited (${gw.process.exitCode}): ${gw.stderr().slice(-2000)}`);
      try {
        samples.push(await takeSample(targets, (Date.now() - start) / 1000));
      } catch (e) {
        sampleErrors++;
        say(`sample failed: ${(e as Error).message}`);
      }
      h.calls.length = 0; // the backend's record of calls is not needed here and would grow
      if (i % Math.max(1, Math.round(300 / a.intervalS)) === 0 && samples.length)
        say(`${Math.round((Date.now() - start) / 1000)} s: ${summaryLine(samples.at(-1)!)}`);
    }
    await churn.stop();
    const counts = churn.counts;
    const verdict = judge(samples, { warmupS: a.warmupS, bounds, expectWorkers: a.workers });
    const ops = counts.wsSessions + counts.sseStreams + counts.publishedWs + counts.publishedHttp + counts.historyReads + counts.presenceReads;
    const failed = Object.values(counts.errors).reduce((x, y) => x + y, 0);
    // A run whose workload did not run proves nothing: it fails too.
    if (counts.received === 0 || counts.publishedWs === 0 || counts.publishedHttp === 0 || counts.historyReads === 0)
      verdict.failures.push("the workload did not run (nothing received, published or read)");
    if (failed > 0.02 * ops) verdict.failures.push(`${failed} client operations failed, more than 2% of ${ops}`);
    if (sampleErrors > Math.max(2, samples.length * 0.05)) verdict.failures.push(`${sampleErrors} samples failed`);
    verdict.ok = verdict.failures.length === 0;
    const command = `npm run soak -- --minutes ${a.minutes} --seed ${a.seed}`;
    const setup = `Setup: one gateway, ${a.workers} workers, on the test kit's nats-server (file store), connect and subscribe hooks on the test kit's backend (cache ${HOOK_CACHE_SIZE} answers, 10 s), REPLAY_CACHE_BYTES ${REPLAY_CACHE_BYTES}, durable ack wait 5 s, per-IP and read limits at their defaults; clients from ${a.ips} loopback addresses, ${USERS} users (named by the connect hook). Machine shared with other work (2 cores).`;
    const report = markdown({
      verdict,
      command,
      startedAt: new Date(t0).toISOString(),
      minutes: a.minutes,
      warmupS: a.warmupS,
      intervalS: a.intervalS,
      samples: samples.length,
      counts,
      setup,
    });
    const growing = verdict.series.filter((s) => s.judged && s.trend.grows).map((s) => s.name);
    const summary = {
      ok: verdict.ok,
      minutes: a.minutes,
      seed: a.seed,
      samples: samples.length,
      workers: verdict.workersSeen.length,
      series: verdict.series.length,
      growing,
      overBound: verdict.series.filter((s) => s.overBound).map((s) => s.name),
      failures: verdict.failures,
      rssSlopeMiBPerHour: Object.fromEntries(
        verdict.series
          .filter((s) => s.kind.endsWith("rss_bytes") && s.trend.fit)
          .map((s) => [s.name, Number((s.trend.fit!.slopePerHour / 1_048_576).toFixed(2))]),
      ),
      received: counts.received,
      published: counts.publishedWs + counts.publishedHttp,
      wsSessions: counts.wsSessions,
      out: a.out,
      command,
      seconds: Math.round((Date.now() - t0) / 1000),
    };
    if (a.out) {
      mkdirSync(a.out, { recursive: true });
      writeFileSync(join(a.out, "soak.md"), report);
      const slopes = verdict.series.map((s) => ({
        name: s.name,
        kind: s.kind,
        judged: s.judged,
        bound: s.bound,
        maxSeen: s.maxSeen,
        overBound: s.overBound,
        trend: s.trend,
      }));
      writeFileSync(join(a.out, "soak.json"), JSON.stringify({ summary, counts, bounds, warmupS: a.warmupS, slopes, samples }, null, 1));
      say(`report written to ${join(a.out, "soak.md")}`);
    } else say("no report written (--no-write, or --quick without --out)");
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    return verdict.ok ? 0 : 1;
  });
}

function summaryLine(s: Sample): string {
  const w = s.workers.map(
    (x) =>
      `w${x.worker} rss ${(x.rssBytes / 1_048_576).toFixed(0)} MiB heap ${((x.state.heap_used_bytes ?? 0) / 1_048_576).toFixed(0)} MiB fds ${x.openFds} feeds ${x.state.hub_feeds} socks ${x.state.ws_sockets}`,
  );
  return `${w.join("; ")}; nats ${(s.natsRssBytes / 1_048_576).toFixed(0)} MiB, ${s.consumers} consumers`;
}

runBench(BENCH, ({ flags }) => run(toArgs(flags)), { failed: 2 });
