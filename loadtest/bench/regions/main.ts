// bench:regions — the gateway in three regions of a NATS supercluster whose inter-region links carry a one-way
// delay (40 ms by default: `tc netem` in a network namespace of the bench's own, or, where netem is not
// permitted, the test kit's link proxies on loopback). A gateway per region (home region a). Three legs:
//   delivery  HTTP publishes to a's gateway at a steady rate, received by a WebSocket client of b's gateway:
//             p50/p99 latency and its excess over the one-way delay (target: p99 excess at most 15 ms);
//   mirror    JetStream publishes in a at a sustained rate; the time from each one's ack to its copy in b's
//             mirror (b's republish), p99; and the most messages b's mirror lagged by (the gateway's metric);
//   resume    a client reads part of a 10,000-message stream on a's gateway while it is published, moves to
//             b's gateway and resumes at its position: lost, duplicated and reordered counted by the chaos
//             run's checker (all must be 0).
// The last stdout line is the run's JSON (resumeLost, resumeDuplicated, deliveryExcessP99Ms, mirrorLagP99Ms, …).
import { loadavg } from "node:os";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import { startSupercluster, REGION_NAMES, type RegionName, type Supercluster } from "#testkit/nats-supercluster.js";
import type { GatewayHandle } from "#testkit/gateway.js";
import { startRegionGateway, subRetrying } from "#testkit/region-gateway.js";
import { TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { guarded } from "../common.js";
import { httpPublisher } from "../http-publisher.js";
import { pace } from "../pace.js";
import { std, type FlagValues } from "../../kit/flags.js";
import { defineBench, runBench } from "../../kit/main.js";
import { commandLine, reportPath, writeReport } from "../../kit/results.js";
import { latencySummary, oneWayDelayMs, resumeVerdict, type ResumeReceipt } from "./stats.js";
import { delayPortsWithNetem, NETNS_ENV, openNamespace } from "./netns.js";

const BENCH = defineBench("regions", {
  delay: { type: "number", min: 0, max: 2_000, help: "one-way delay of every inter-region link, ms (default 40)" },
  rtt: { type: "number", min: 0, max: 4_000, help: "the same as a round trip: the one-way delay is half of it" },
  links: {
    type: "string",
    default: "auto",
    choices: ["auto", "netem", "proxy"],
    help: "how the delay is made: netem in a namespace, the user-space link proxies, or netem where permitted",
  },
  rate: std("rate", { default: 100, quick: 50, min: 1, help: "delivery leg: HTTP publishes per second to region a's gateway" }),
  seconds: std("seconds", { default: 20, quick: 4, help: "how long the delivery and the mirror legs each publish (s)" }),
  "mirror-rate": { type: "number", default: 1_000, quick: 300, min: 1, help: "mirror leg: JetStream publishes per second in region a" },
  messages: std("messages", { default: 10_000, quick: 2_000, help: "resume leg: messages in the stream the client moves across" }),
  quick: std("quick"),
  out: std("out"),
  "no-write": std("no-write"),
});

const REPORT = "regions.md";
const nowMs = (): number => performance.timeOrigin + performance.now();
const enc = new TextEncoder();

type Ctx = { sc: Supercluster; gw: Partial<Record<RegionName, GatewayHandle>>; conns: NatsConnection[]; sockets: TestClient[] };

/** A region's gateway with the benches' settings: the per-IP abuse limits and the publish rate off (every client is 127.0.0.1). */
const regionGateway = (sc: Supercluster, region: RegionName): Promise<GatewayHandle> =>
  startRegionGateway(sc, region, {
    inheritStderr: true,
    resumeWait: "3s",
    env: { PUBLISH_RATE: "-1" },
    args: ["--max-connections-per-ip=-1", "--connect-rate-per-ip=-1", "--frame-rate=-1", "--read-rate-per-ip=-1"],
  });

async function socket(ctx: Ctx, g: GatewayHandle): Promise<TestClient> {
  const c = await TestClient.connect(g.wsUrl);
  ctx.sockets.push(c);
  return c;
}

/** Each `msg` frame's arrival time, beside the client's own list (registered after it, so they line up). */
function arrivals(c: TestClient): number[] {
  const at: number[] = [];
  c.ws.on("message", () => {
    const t = nowMs();
    while (at.length < c.msgs.length) at.push(t);
  });
  return at;
}

async function deliveryLeg(ctx: Ctx, ch: string, rate: number, seconds: number): Promise<{ latencies: number[]; sent: number; failed: number }> {
  const cb = await socket(ctx, ctx.gw.b!);
  await cb.sub(ch);
  const at = arrivals(cb);
  // Kept-alive connections; a few first, unmeasured: the first publish opens one.
  const pub = httpPublisher(ctx.gw.a!.url);
  for (let k = 0; k < 5; k++) await pub.publish(ch, JSON.stringify({ k: -1, t: 0 }));
  await cb.waitForMsgs(5, 30_000);
  const skip = cb.msgs.length;
  let sent = 0;
  let failed = 0;
  const inflight: Promise<void>[] = [];
  await new Promise<void>((done) => {
    pace(rate, "even", seconds * 1000, () => {
      const k = sent++;
      inflight.push(
        pub.publish(ch, JSON.stringify({ k, t: nowMs() })).then(
          (r) => void (r.status === 201 || failed++),
          () => void failed++,
        ),
      );
    });
    setTimeout(done, seconds * 1000 + 50);
  });
  await Promise.all(inflight);
  pub.close();
  await waitFor(() => cb.msgs.length - skip >= sent - failed || undefined, { timeoutMs: 30_000, what: `${sent - failed} deliveries in b` }).catch(
    () => undefined,
  );
  const latencies = cb.msgs.slice(skip).map((m, i) => at[skip + i]! - (m.data as { t: number }).t);
  return { latencies, sent, failed };
}

async function mirrorLeg(ctx: Ctx, rate: number, seconds: number): Promise<{ lags: number[]; sent: number; maxLagMessages: number; scrapes: number }> {
  const ch = "bench.mirror";
  const ncA = await connect({ servers: ctx.sc.regions.a.url });
  const ncB = await connect({ servers: ctx.sc.regions.b.url });
  ctx.conns.push(ncA, ncB);
  const js = jetstream(ncA);
  const ackAt: number[] = [];
  const seenAt: number[] = [];
  ncB.subscribe(`evlive.b.${ch}`, { callback: (_e, m) => void (seenAt[(m.json() as { k: number }).k] = nowMs()) });
  await ncB.flush();
  let maxLagMessages = 0;
  let scrapes = 0;
  const scrape = setInterval(() => {
    void fetch(`${ctx.gw.b!.metricsUrl}/metrics`)
      .then((r) => r.text())
      .then((t) => {
        const found = [...t.matchAll(/^fanout_region_mirror_lag_messages\{[^}]*\} (\d+)/gm)];
        if (found.length) scrapes++;
        for (const m of found) maxLagMessages = Math.max(maxLagMessages, Number(m[1]));
      })
      .catch(() => undefined);
  }, 250);
  let sent = 0;
  const acks: Promise<void>[] = [];
  await new Promise<void>((done) => {
    pace(rate, "even", seconds * 1000, () => {
      const k = sent++;
      acks.push(js.publish(`ev.${ch}`, enc.encode(JSON.stringify({ k }))).then(() => void (ackAt[k] = nowMs())));
    });
    setTimeout(done, seconds * 1000 + 50);
  });
  await Promise.all(acks);
  await waitFor(() => seenAt.filter(Boolean).length >= sent || undefined, { timeoutMs: 60_000, what: `${sent} copies in b's mirror` }).catch(() => undefined);
  clearInterval(scrape);
  const lags = ackAt.flatMap((t, k) => (seenAt[k] !== undefined ? [seenAt[k]! - t] : []));
  return { lags, sent, maxLagMessages, scrapes };
}

async function resumeLeg(ctx: Ctx, total: number): Promise<ReturnType<typeof resumeVerdict> & { movedAt: number; received: number; waitedMs: number }> {
  const ch = "bench.resume";
  const ca = await socket(ctx, ctx.gw.a!);
  const okA = await ca.sub(ch, { from: "all" });
  const nc = await connect({ servers: ctx.sc.regions.a.url });
  ctx.conns.push(nc);
  const js = jetstream(nc);
  const stored: { seq: number; i: number }[] = [];
  // Published at a steady 2,000/s in the background, 100 in flight at most, while the client reads and moves.
  const publishing = (async () => {
    for (let i = 0; i < total; i += 100) {
      const batch = Array.from({ length: Math.min(100, total - i) }, (_, k) =>
        js.publish(`ev.${ch}`, enc.encode(JSON.stringify({ i: i + k }))).then((a) => void stored.push({ seq: a.seq, i: i + k })),
      );
      await Promise.all([...batch, new Promise((r) => setTimeout(r, 50))]);
    }
  })();
  const half = Math.floor(total / 2);
  await ca.waitForMsgs(half, 60_000);
  const seenOnA = ca.msgs.slice();
  ca.close();
  const last = seenOnA.at(-1)!;
  const cb = await socket(ctx, ctx.gw.b!);
  const t0 = nowMs();
  await subRetrying(cb, ch, { seq: last.seq + 1, epoch: okA.epoch });
  const waitedMs = nowMs() - t0;
  await publishing;
  const lastSeq = Math.max(...stored.map((m) => m.seq));
  await waitFor(() => (cb.msgs.at(-1)?.seq ?? 0) >= lastSeq || undefined, { timeoutMs: 60_000, what: `b's client at seq ${lastSeq}` }).catch(() => undefined);
  const got: ResumeReceipt[] = [
    ...seenOnA.map((m) => ({ seq: m.seq, i: (m.data as { i: number }).i, conn: 1 as const })),
    ...cb.msgs.map((m) => ({ seq: m.seq, i: (m.data as { i: number }).i, conn: 2 as const })),
  ];
  return { ...resumeVerdict(ch, stored, got), movedAt: seenOnA.length, received: got.length, waitedMs: Math.round(waitedMs) };
}

async function measure(v: FlagValues<typeof BENCH.flags>, argv: readonly string[], linkNote: string): Promise<number> {
  const delayMs = oneWayDelayMs(v);
  const say = (s: string) => process.stderr.write(`regions: ${s}\n`);
  const netns = process.env[NETNS_ENV];
  const ctx: Ctx = { sc: undefined as unknown as Supercluster, gw: {}, conns: [], sockets: [] };
  const cleanup = async () => {
    for (const s of ctx.sockets) s.close();
    await Promise.all(ctx.conns.map((c) => c.close().catch(() => undefined)));
    await Promise.all(Object.values(ctx.gw).map((g) => g.stop()));
    await ctx.sc?.stop();
  };
  return guarded(say, 15 * 60_000, cleanup, async () => {
    const load0 = loadavg()[0]!;
    say("starting three regions");
    ctx.sc = await startSupercluster({ readyTimeoutMs: 60_000 });
    ctx.gw.a = await regionGateway(ctx.sc, "a");
    [ctx.gw.b, ctx.gw.c] = await Promise.all([regionGateway(ctx.sc, "b"), regionGateway(ctx.sc, "c")]);
    // The same path with the links undelayed first: what the machine and the path add without the delay.
    say("delivery leg with undelayed links (the baseline)");
    const d0 = await deliveryLeg(ctx, "bench.delivery0", v.rate, v.seconds);
    if (netns)
      delayPortsWithNetem(
        REGION_NAMES.map((r) => ctx.sc.regions[r].links.port),
        delayMs,
      );
    else for (const r of REGION_NAMES) ctx.sc.regions[r].links.delay(delayMs);
    say(`links delayed ${delayMs} ms one way (${netns ? `tc netem in namespace ${netns}` : "link proxies"}); delivery leg`);
    const d = await deliveryLeg(ctx, "bench.delivery", v.rate, v.seconds);
    say("mirror leg");
    const m = await mirrorLeg(ctx, v["mirror-rate"], v.seconds);
    say(`resume leg (${v.messages} messages)`);
    const r = await resumeLeg(ctx, v.messages);
    const load1 = loadavg()[0]!;
    const ds = latencySummary(d.latencies, delayMs);
    const ds0 = latencySummary(d0.latencies, 0);
    const ms = latencySummary(m.lags, delayMs);
    const result = {
      bench: "regions",
      links: netns ? "netem" : "proxy",
      oneWayDelayMs: delayMs,
      deliveryP50Ms: ds.p50Ms,
      deliveryP99Ms: ds.p99Ms,
      deliveryExcessP50Ms: ds.excessP50Ms,
      deliveryExcessP99Ms: ds.excessP99Ms,
      deliverySamples: ds.samples,
      deliveryBaselineP50Ms: ds0.p50Ms,
      deliveryBaselineP99Ms: ds0.p99Ms,
      deliveryFailed: d.failed,
      deliveryMissing: d.sent - d.failed - ds.samples,
      mirrorLagP50Ms: ms.p50Ms,
      mirrorLagP99Ms: ms.p99Ms,
      mirrorLagMaxMessages: m.maxLagMessages,
      mirrorLagScrapes: m.scrapes,
      mirrorSamples: ms.samples,
      mirrorMissing: m.sent - ms.samples,
      resumeMessages: v.messages,
      resumeMovedAt: r.movedAt,
      resumeWaitedMs: r.waitedMs,
      resumeLost: r.lost,
      resumeDuplicated: r.duplicated,
      resumeOutOfOrder: r.outOfOrder,
      resumeMismatched: r.mismatched,
      loadAvg1m: [Math.round(load0 * 100) / 100, Math.round(load1 * 100) / 100],
    };
    const lines = [
      `# bench:regions`,
      ``,
      `\`${commandLine("regions", argv)}\` · ${new Date().toISOString()} · load average (1 min) ${result.loadAvg1m.join(" → ")} · 2 cores shared`,
      ``,
      `Three regions (single-node NATS clusters a, b, c joined by gateways), a gateway per region (home region a), inter-region links delayed ${delayMs} ms one way: ${linkNote}`,
      ``,
      `| leg | what | p50 | p99 | excess over ${delayMs} ms p50 / p99 | samples |`,
      `|---|---|---:|---:|---:|---:|`,
      `| delivery | HTTP publish to a's gateway → WebSocket client of b's gateway, ${v.rate}/s for ${v.seconds} s | ${ds.p50Ms} ms | ${ds.p99Ms} ms | ${ds.excessP50Ms} / ${ds.excessP99Ms} ms (target p99 ≤ 15) | ${ds.samples} (${d.failed} failed, ${result.deliveryMissing} missing) |`,
      `| delivery, baseline | the same, links undelayed, before the delay is set | ${ds0.p50Ms} ms | ${ds0.p99Ms} ms | | ${ds0.samples} (${d0.failed} failed) |`,
      `| mirror | JetStream publish ack in a → copy in b's mirror (its republish), ${v["mirror-rate"]}/s for ${v.seconds} s | ${ms.p50Ms} ms | ${ms.p99Ms} ms | ${ms.excessP50Ms} / ${ms.excessP99Ms} ms | ${ms.samples} (most behind: ${m.maxLagMessages} messages in ${m.scrapes} scrapes of b's fanout_region_mirror_lag_messages) |`,
      ``,
      `Resume across regions: ${v.messages.toLocaleString("en-US")} messages published in a at 2,000/s while a client read ${r.movedAt.toLocaleString("en-US")} of them on a's gateway and resumed at its position on b's (accepted after ${r.waitedMs} ms): **lost ${r.lost}, duplicated ${r.duplicated}, out of order ${r.outOfOrder}, mismatched ${r.mismatched}** (the chaos run's checker).`,
    ];
    const path = reportPath(v, REPORT);
    if (path) writeReport(path, `${lines.join("\n")}\n`);
    else process.stdout.write(`${lines.join("\n")}\n`);
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return r.lost + r.duplicated + r.outOfOrder + r.mismatched === 0 ? 0 : 1;
  });
}

runBench(BENCH, async ({ flags: v, argv }) => {
  oneWayDelayMs(v); // a conflicting pair of flags fails here, before anything starts
  if (process.env[NETNS_ENV] || v.links === "proxy")
    return measure(
      v,
      argv,
      process.env[NETNS_ENV]
        ? "tc netem on the loopback of a network namespace the bench made, on the regions' gateway link ports only."
        : "the test kit's user-space TCP proxies on loopback (--links proxy).",
    );
  const ns = openNamespace(process.argv[1]!);
  if ("skipped" in ns) {
    if (v.links === "netem") throw new Error(`--links netem: ${ns.skipped}`);
    process.stderr.write(`regions: netem skipped: ${ns.skipped}; the links are delayed by the link proxies on loopback instead\n`);
    return measure(
      v,
      argv,
      `SKIPPED netem (${ns.skipped}); the test kit's user-space TCP proxies on loopback hold each chunk instead (Node timers, about 1 ms granularity).`,
    );
  }
  try {
    return await ns.runInside(process.argv.slice(2));
  } finally {
    ns.remove();
  }
});
