// The Node side of the evaluation, one job per forked process (nats.js v3, the client the gateway uses):
// ordered consumers, a durable push consumer shared through its deliver group, a KV watcher and putter, and
// the publish-latency probe of seed 003. The parent sends {type:"start", job}; the process answers "ready"
// once its consumers are subscribed, then "result" (or "error") and exits. Every job is bounded by its
// timeoutMs: at the limit it reports what it counted so far with timedOut set.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream, type JsMsg } from "@nats-io/jetstream";
import { percentile } from "../common.js";

export type NodeJob = { servers: string; timeoutMs: number } & (
  | { kind: "ordered"; stream: string; filter: string; clients: number; expect: number }
  | { kind: "push-group"; stream: string; consumer: string; clients: number; expect: number }
  | { kind: "kv-watch"; bucket: string; expect: number }
  | { kind: "kv-put"; bucket: string; count: number; size: number }
  | { kind: "publish"; subject: string; count: number; size: number; window: number }
);

/** Rates the way `nats bench` counts them: per client from its first message to its last. */
export type NodeRates = { perClient: { msgs: number; msgsPerSec: number }[]; received: number; aggregate: number };

export type NodeLatency = { count: number; minUs: number; avgUs: number; maxUs: number; p50Us: number; p99Us: number; perMessageUs: number };

/** cpuPct: this process's CPU (user + system) from "ready" to the end, in % of one core. */
export type NodeResult = { rates: NodeRates; latency?: NodeLatency; timedOut: boolean; maxRssKb: number; cpuPct: number };

export type FromNodeClient = { type: "ready" } | { type: "result"; result: NodeResult } | { type: "error"; message: string };

type Counter = { n: number; first: number; last: number };

const newCounter = (): Counter => ({ n: 0, first: 0, last: 0 });

function tick(c: Counter): void {
  const t = performance.now();
  if (c.n === 0) c.first = t;
  c.last = t;
  c.n++;
}

function ratesOf(counters: Counter[]): NodeRates {
  const perClient = counters.map((c) => ({ msgs: c.n, msgsPerSec: c.n > 1 ? c.n / ((c.last - c.first) / 1000) : 0 }));
  const live = counters.filter((c) => c.n > 0);
  const first = Math.min(...live.map((c) => c.first));
  const last = Math.max(...live.map((c) => c.last));
  const received = counters.reduce((a, c) => a + c.n, 0);
  return { perClient, received, aggregate: received > 1 && last > first ? received / ((last - first) / 1000) : 0 };
}

function latencyOf(us: number[], wallMs: number): NodeLatency {
  const s = [...us].sort((a, b) => a - b);
  return {
    count: s.length,
    minUs: s[0] ?? NaN,
    avgUs: s.reduce((a, b) => a + b, 0) / Math.max(s.length, 1),
    maxUs: s[s.length - 1] ?? NaN,
    p50Us: percentile(s, 50),
    p99Us: percentile(s, 99),
    perMessageUs: (wallMs * 1000) / Math.max(s.length, 1),
  };
}

const payload = (size: number): Uint8Array => new Uint8Array(size).fill(120);

/** Resolves when `done()` holds, polled every 20 ms, or at the deadline (false). */
async function until(done: () => boolean, deadline: number): Promise<boolean> {
  while (!done()) {
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

async function connectAll(servers: string, n: number): Promise<NatsConnection[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => connect({ servers: servers.split(","), name: `bench-jetstream-${i + 1}`, noAsyncTraces: true })));
}

async function run(job: NodeJob, ready: () => void): Promise<Omit<NodeResult, "cpuPct">> {
  const deadline = performance.now() + job.timeoutMs;
  const rss = (): number => process.resourceUsage().maxRSS;
  switch (job.kind) {
    case "ordered":
    case "push-group": {
      const conns = await connectAll(job.servers, job.clients);
      const counters = conns.map(newCounter);
      const total = (): number => counters.reduce((a, c) => a + c.n, 0);
      const stops: Array<() => void> = [];
      await Promise.all(
        conns.map(async (nc, i) => {
          const js = jetstream(nc);
          const c = counters[i]!;
          if (job.kind === "ordered") {
            const consumer = await js.consumers.get(job.stream, { filter_subjects: [job.filter] });
            const it = await consumer.consume({
              callback: () => {
                tick(c);
                if (c.n >= job.expect) it.stop();
              },
            });
            stops.push(() => it.stop());
          } else {
            const consumer = await js.consumers.getPushConsumer(job.stream, job.consumer);
            const it = await consumer.consume({
              callback: (m: JsMsg) => {
                m.ack();
                tick(c);
              },
            });
            stops.push(() => it.stop());
          }
        }),
      );
      ready();
      const want = job.kind === "ordered" ? job.expect * job.clients : job.expect;
      const ok = await until(() => total() >= want, deadline);
      // Acks still buffered go out before the connections close.
      await Promise.all(conns.map((nc) => nc.flush().catch(() => undefined)));
      stops.forEach((s) => s());
      await Promise.all(conns.map((nc) => nc.close()));
      return { rates: ratesOf(counters), timedOut: !ok, maxRssKb: rss() };
    }
    case "kv-watch": {
      const [nc] = await connectAll(job.servers, 1);
      const js = jetstream(nc!);
      const c = newCounter();
      // What a KV watch is: an ordered consumer on the bucket's stream, last value per key, then updates.
      const consumer = await js.consumers.get(`KV_${job.bucket}`, { filter_subjects: [`$KV.${job.bucket}.>`], deliver_policy: DeliverPolicy.LastPerSubject });
      const it = await consumer.consume({ callback: () => tick(c) });
      ready();
      const ok = await until(() => c.n >= job.expect, deadline);
      it.stop();
      await nc!.close();
      return { rates: ratesOf([c]), timedOut: !ok, maxRssKb: rss() };
    }
    case "kv-put":
    case "publish": {
      const [nc] = await connectAll(job.servers, 1);
      const js = jetstream(nc!);
      const body = payload(job.size);
      const subjectOf = job.kind === "kv-put" ? (i: number) => `$KV.${job.bucket}.${i}` : () => job.subject;
      const window = job.kind === "kv-put" ? 1 : job.window;
      const lat: number[] = [];
      const c = newCounter();
      ready();
      const t0 = performance.now();
      let next = 0;
      let timedOut = false;
      // `window` publishes in flight at once; 1 is sequential (await each ack before the next).
      const lane = async (): Promise<void> => {
        while (next < job.count) {
          if (performance.now() > deadline) {
            timedOut = true;
            return;
          }
          const i = next++;
          const t = performance.now();
          await js.publish(subjectOf(i), body);
          lat.push((performance.now() - t) * 1000);
          tick(c);
        }
      };
      await Promise.all(Array.from({ length: Math.min(window, job.count) }, lane));
      const wallMs = performance.now() - t0;
      await nc!.close();
      return { rates: ratesOf([c]), latency: latencyOf(lat, wallMs), timedOut, maxRssKb: rss() };
    }
  }
}

/** Entry point of the forked process. */
function main(): void {
  process.on("disconnect", () => process.exit(0));
  process.once("message", (m: { type: "start"; job: NodeJob }) => {
    const send = (msg: FromNodeClient): Promise<void> => new Promise((r) => process.send!(msg, () => r()));
    let cpu0 = process.cpuUsage();
    let t0 = performance.now();
    const ready = (): void => {
      cpu0 = process.cpuUsage();
      t0 = performance.now();
      void send({ type: "ready" });
    };
    run(m.job, ready).then(
      async (r) => {
        const c = process.cpuUsage(cpu0);
        const wallUs = (performance.now() - t0) * 1000;
        await send({ type: "result", result: { ...r, cpuPct: wallUs > 0 ? ((c.user + c.system) / wallUs) * 100 : 0 } });
        process.exit(0);
      },
      async (e: unknown) => {
        await send({ type: "error", message: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
        process.exit(1);
      },
    );
  });
}

if (process.send) main();
