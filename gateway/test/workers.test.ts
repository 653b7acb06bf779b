// Workers you can find: each logs `worker ready` with its pid and slot, /v1/stats lists each one's pid, the
// restart line names the dead worker's pid apart from the primary's, and a restarted worker takes the slot of
// the one it replaces. And /readyz answers 200 only once every worker listens (the first /v1/stats used to
// wait 5 s for a worker still starting, and fail).
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../src/net.js";
import { startGateway, type GatewayHandle, type LogLine } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { waitFor } from "#testkit/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});
async function nats(): Promise<NatsServerHandle> {
  const n = await startNatsServer();
  cleanups.push(() => n.stop());
  return n;
}
async function track(g: Promise<GatewayHandle>): Promise<GatewayHandle> {
  const gw = await g;
  cleanups.push(() => gw.stop("SIGKILL"));
  return gw;
}

type PerWorker = { worker: number; pid: number; connections: number }[];
const perWorker = async (gw: GatewayHandle): Promise<PerWorker> =>
  ((await (await fetch(`${gw.metricsUrl}/v1/stats`)).json()) as { perWorker: PerWorker }).perWorker;
const readyLines = (gw: GatewayHandle): LogLine[] => gw.logs.filter((l) => l.msg === "worker ready");

describe("workers — found by pid and slot", () => {
  it("workers — at start: no /readyz 200 before every worker logged `worker ready`; the first /v1/stats answers at once, each worker with its pid", async () => {
    const n = await nats();
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const answers: { status: number; at: number }[] = [];
    let stats: { status: number; ms: number; body: string } | undefined;
    let started = false;
    const gwStart = track(startGateway({ natsUrl: n.url, workers: 4, port, logLevel: "info" }).finally(() => (started = true)));
    // Asked every 5 ms from the spawn on; the first worker that listens answers while the others start.
    while (!started) {
      const r = await fetch(`${base}/readyz`).catch(() => undefined);
      if (r) {
        answers.push({ status: r.status, at: Date.now() });
        await r.body?.cancel();
        if (!stats) {
          const t0 = performance.now();
          const s = await fetch(`${base}/v1/stats`);
          stats = { status: s.status, ms: performance.now() - t0, body: await s.text() };
        }
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    const gw = await gwStart;
    const ready = readyLines(gw);
    expect(ready.map((l) => l.worker).sort()).toEqual([1, 2, 3, 4]);
    for (const l of ready) expect(l).toMatchObject({ role: "worker", pid: expect.any(Number) as number, port });
    const lastReady = Math.max(...ready.map((l) => Date.parse(l.time as string)));
    expect(answers.filter((a) => a.status === 200 && a.at < lastReady)).toEqual([]);
    await waitFor(async () => (await fetch(`${base}/readyz`)).status === 200, { what: "readyz 200" });
    // The stats asked while workers were still starting: answered by those that listen, without the 5 s scrape timeout.
    expect(stats, "a worker answered before the gateway was ready").toBeDefined();
    expect(stats!.status, stats!.body).toBe(200);
    expect(stats!.ms).toBeLessThan(4_000);
    const per = await perWorker(gw);
    const byWorker = ready.map((l) => [l.worker as number, l.pid!] as const).sort((a, b) => a[0] - b[0]);
    expect(per.map((w) => [w.worker, w.pid])).toEqual(byWorker);
  });

  it("workers — a killed worker: the restart line names it (`worker`, `workerPid`; `pid` is the primary's), it comes back in its slot with a new pid", async () => {
    const n = await nats();
    const gw = await track(startGateway({ natsUrl: n.url, workers: 2, logLevel: "info", args: ["--restart-backoff", "100ms"] }));
    const victim = readyLines(gw).find((l) => l.worker === 2)!.pid!;
    process.kill(victim, "SIGKILL");
    const restart = await waitFor(() => gw.logs.find((l) => l.msg === "worker exited; restarting"), { what: "the restart line" });
    expect(restart).toMatchObject({ role: "primary", pid: gw.process.pid, worker: 2, workerPid: victim, signal: "SIGKILL" });
    const back = await waitFor(() => readyLines(gw).find((l) => l.worker === 2 && l.pid !== victim), { what: "worker 2 ready again", timeoutMs: 20_000 });
    const first = readyLines(gw).find((l) => l.worker === 1)!.pid;
    await waitFor(
      async () =>
        JSON.stringify((await perWorker(gw)).map((w) => [w.worker, w.pid])) ===
        JSON.stringify([
          [1, first],
          [2, back.pid],
        ]),
      {
        what: "/v1/stats listing slots 1 and 2 with the new pid",
      },
    );
    expect((await fetch(`${gw.url}/readyz`)).status).toBe(200);
  });
});
