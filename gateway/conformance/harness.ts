// The conformance suite's world: a real nats-server and gateway (two workers, JWT auth, an API key for HTTP
// publishes, an RPC backend: a real HTTP server answering by method), a TCP proxy in front of it (gateway/testkit/tcp-proxy.ts) that can cut, stall or refuse
// connections, and the faults the scenarios name. Built from the gateway's test kit (gateway/testkit, imported as #testkit/…).
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startTcpProxy } from "#testkit/tcp-proxy.js";
import { httpPublish } from "#testkit/ws-client.js";
import { scrape } from "#testkit/metrics.js";
import { waitFor } from "#testkit/wait.js";
import { publishMany } from "#testkit/stream-fill.js";
import { HookBackend, type HookAnswer, type HookCall } from "#testkit/hook-backend.js";
import { AUDIENCE, ISSUER, SECRET, sign } from "#testkit/auth.js";
import type { Harness, Step, SubTokenSpec, TokenSpec } from "./runner.js";

const API_KEY = "conformance-api-key-0123456789";

export type GatewayHarness = Harness & {
  /** Undoes what a scenario left behind: the proxy accepts and listens again. */
  reset(): Promise<void>;
  close(): Promise<void>;
};

/**
 * The RPC backend's answers, by method: `conf.echo` answers what it was told (method, user, data), `conf.fail`
 * an error `not_found`, `conf.busy` a temporary error `busy`, `conf.slow` null after 3 s; any other method null.
 */
function rpcAnswer(c: HookCall): HookAnswer {
  const { method, user, data } = c.body;
  if (method === "conf.echo") return { body: { data: { method, user, data } } };
  if (method === "conf.fail") return { body: { error: { code: "not_found", message: "no such thing" } } };
  if (method === "conf.busy") return { body: { error: { code: "busy", message: "try again", temporary: true } } };
  if (method === "conf.slow") return { body: { data: null }, delayMs: 3_000 };
  return { body: { data: null } };
}

/**
 * `wsPath`: the door the clients connect to (`/ws`, or the Centrifuge door `/connection/websocket`); `env`:
 * settings on top of the suite's.
 */
export async function startHarness(o: { wsPath?: string; env?: Record<string, string> } = {}): Promise<GatewayHarness> {
  const rpc = await HookBackend.start();
  rpc.answer = rpcAnswer;
  const nats: NatsServerHandle = await startNatsServer();
  // Namespace `co` coalesces (PROTOCOL.md "Coalesced frames"): the `coalesced` and `deltas-coalesced` scenarios' channels are in it.
  const dir = mkdtempSync(join(tmpdir(), "fgw-conformance-"));
  writeFileSync(join(dir, "namespaces.yaml"), "namespaces:\n  co:\n    coalesce: 200ms\n");
  const gw: GatewayHandle = await startGateway({
    natsUrl: nats.url,
    workers: 2,
    logLevel: "info",
    args: ["--restart-backoff", "100ms"],
    env: {
      JWT_SECRET: SECRET,
      JWT_ISSUER: ISSUER,
      JWT_AUDIENCE: AUDIENCE,
      JWT_CLOCK_TOLERANCE: "0s",
      API_KEYS: API_KEY,
      RPC_HOOK_URL: rpc.url("/rpc"),
      NAMESPACES_FILE: join(dir, "namespaces.yaml"),
      ...o.env,
    },
  });
  const nc: NatsConnection = await natsConnect({ servers: nats.url });
  const proxy = await startTcpProxy({ host: "127.0.0.1", port: gw.port });
  const faults: Record<string, (step: Step) => unknown> = {
    cut: () => proxy.cut(),
    stall: () => proxy.stall(),
    refuse: () => proxy.refuse(true),
    accept: () => proxy.refuse(false),
    down: () => proxy.down(),
    up: () => proxy.up(),
    kill_workers: async () => {
      for (const pid of await childPids(gw.process.pid!)) process.kill(pid, "SIGKILL");
    },
    recreate_stream: async () => {
      const jsm = await jetstreamManager(nc);
      const old = await jsm.streams.info("FANOUT_CHANNELS");
      await jsm.streams.delete("FANOUT_CHANNELS");
      await jsm.streams.add(old.config);
    },
    // `count` messages `{n}` (n from `from`) straight into JetStream: thousands in a second, where HTTP takes many.
    fill: (step) => publishMany(jetstream(nc), step.channel as string, step.count as number, step.from as number, "ev", "n"),
    wait: (step) => new Promise((r) => setTimeout(r, step.ms as number)),
  };
  return {
    wsUrl: `ws://127.0.0.1:${proxy.port}${o.wsPath ?? "/ws"}`,
    token: (spec: TokenSpec) =>
      sign(
        { channels: { sub: spec.sub ?? [">"], pub: spec.pub ?? [">"], ...(spec.auto ? { auto: spec.auto } : {}) }, ...(spec.rpc ? { rpc: spec.rpc } : {}) },
        { sub: spec.user ?? "conformance", exp: spec.ttlSec ? Math.floor(Date.now() / 1000) + spec.ttlSec : "10m" },
      ),
    subToken: (spec: SubTokenSpec) =>
      sign({ channel: spec.channel }, { sub: spec.user ?? "conformance", exp: spec.ttlSec ? Math.floor(Date.now() / 1000) + spec.ttlSec : "10m" }),
    publish: (channel, data) => {
      const from = gw.logs.length;
      return waitFor(
        async () => {
          const r = await httpPublish(gw.url, channel, data, { "x-api-key": API_KEY });
          if (r.status === 201) return r.body.seq as number;
          // Kept as the wait's last error: a publish that never succeeds says what the gateway answered.
          throw new Error(`HTTP ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
        },
        { timeoutMs: 15_000, what: `publish to ${channel}` },
      ).catch((e: unknown) => {
        // The gateway's own account of it (the workers' ack-timeout warning names the stream and its state).
        const said = gw.logs.slice(from).filter((l) => (l.level ?? 0) >= 40);
        throw new Error(
          `${e instanceof Error ? e.message : String(e)}\ngateway warnings meanwhile:\n${said.map((l) => JSON.stringify(l)).join("\n") || "(none)"}`,
        );
      });
    },
    deltasSent: async () => (await scrape(gw.metricsUrl)).value("fanout_delta_frames_total", { kind: "delta" }),
    async fault(name: string, step: Step) {
      const fault = faults[name];
      if (!fault) throw new Error(`unknown fault ${name}`);
      await fault(step);
    },
    async reset() {
      proxy.refuse(false);
      proxy.cut(); // stalled links too
      await proxy.up();
    },
    async close() {
      await proxy.close();
      await nc.close();
      await gw.stop();
      await nats.stop();
      await rpc.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
