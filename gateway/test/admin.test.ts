// The admin listener: with authentication on, /metrics and /v1/stats leave the public port for the
// primary's own listener (loopback by default).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let admin: string;

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, args: ["--admin-port", "0"], env: { JWT_SECRET: "a-secret-of-at-least-32-characters!!" } });
  const ready = gw.logs.find((l) => l.msg === "gateway ready")!;
  admin = `http://127.0.0.1:${ready.adminPort as number}`;
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

describe("admin listener", () => {
  it("admin — with auth on, the public port has no /metrics or /v1/stats; the admin listener serves both, aggregated over the workers", async () => {
    expect((await fetch(`${gw.url}/metrics`)).status).toBe(404);
    expect((await fetch(`${gw.url}/v1/stats`)).status).toBe(404);
    const m = await fetch(`${admin}/metrics`);
    expect(m.status).toBe(200);
    const text = await m.text();
    expect(text).toMatch(/^fanout_connections /m);
    expect(text).toMatch(/^fanout_workers 2$/m);
    // Each worker's tables, which its features add as they start (metrics/worker-state.ts): none is lost.
    const tables = ["ws_sockets", "sse_streams", "hub_feeds", "replay_cache_pages", "replay_cache_bytes", "presence_channels", "presence_own"];
    tables.push(
      "presence_unremoved",
      "ip_table_entries",
      "read_limit_ips",
      "read_limit_users",
      "publish_limit_entries",
      "hook_cache_connect",
      "hook_cache_subscribe",
    );
    for (const worker of ["1", "2"]) {
      const what = [...text.matchAll(new RegExp(`^fanout_worker_state\\{worker="${worker}",pid="\\d+",what="(\\w+)"\\}`, "gm"))].map((x) => x[1]);
      expect(what).toEqual(expect.arrayContaining(["heap_used_bytes", "event_loop_lag_max_ms", ...tables]));
    }
    const s = (await (await fetch(`${admin}/v1/stats`)).json()) as { workers: number; perWorker: { worker: number }[] };
    expect(s.workers).toBe(2);
    expect(s.perWorker).toHaveLength(2); // each worker's share, for the live page's per-worker lines
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    expect((await fetch(`${admin}/nope`)).status).toBe(404);
    // The public port still answers its own routes.
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
  });

  it("admin — a worker that dies while a scrape waits for it does not hold /metrics until the scrape's 5 s timeout", async () => {
    const [stuck] = await childPids(gw.process.pid!);
    process.kill(stuck!, "SIGSTOP"); // connected, but answers nothing
    try {
      const started = Date.now();
      const pending = fetch(`${admin}/metrics`);
      // The request reaches the primary (its own listener) at once; then the worker dies.
      await new Promise((r) => setTimeout(r, 300));
      process.kill(stuck!, "SIGKILL");
      const m = await pending;
      expect(m.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(3_000);
      expect(await m.text()).toMatch(/^fanout_connections /m);
    } finally {
      try {
        process.kill(stuck!, "SIGKILL");
      } catch {
        // already gone
      }
    }
  });
});
