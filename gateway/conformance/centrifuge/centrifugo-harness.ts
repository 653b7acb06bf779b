// The scenario set's world with a real Centrifugo v6 server in place of the gateway (the side-by-side run,
// loadtest/compare/centrifugo.ts): the same Harness as harness.ts, each fault mapped to what Centrifugo has.
// Centrifugo runs with its memory engine and a configuration equivalent to the conformance gateway's: the
// token HMAC secret, issuer and audience, a namespace `conf` with history, recovery, positioning, presence,
// join/leave and Fossil deltas allowed, and its proxies (connect, subscribe, publish, RPC) pointed at a small
// backend that answers as the gateway's token rights and RPC hook do.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AUDIENCE, ISSUER, SECRET, sign } from "#testkit/auth.js";
import { HookBackend, type HookAnswer, type HookCall } from "#testkit/hook-backend.js";
import { startTcpProxy } from "#testkit/tcp-proxy.js";
import { waitFor } from "#testkit/wait.js";
import { toCentrifugoChannel, toGatewayChannel } from "../../src/protocol/centrifugo-channels.js";
import type { GatewayHarness } from "../harness.js";
import type { Step, SubTokenSpec, TokenSpec } from "../runner.js";

const API_KEY = "conformance-api-key-0123456789";
/** Server API publishes per batch request of a `fill`. */
const FILL_BATCH = 500;

/**
 * How each fault of the scenario set is played on Centrifugo (the report prints it). Faults not named here
 * (the proxy's `cut`, `refuse`, `accept`, `down`, `up`, and `wait`) are the same on both servers.
 */
export const CENTRIFUGO_FAULTS: Readonly<Record<string, string>> = {
  "token rights":
    "the gateway's token rights (`sub`, `pub`, `rpc` patterns) have no Centrifugo claim: they ride in the connection token's `meta`, which Centrifugo hands to its subscribe, publish and RPC proxies, and the backend refuses with 103 what they do not grant; its subscribe answers force recovery, positioning and join/leave pushes (a subscribe proxy makes Centrifugo ignore the client's own flags)",
  publish: "the server API's `publish` (POST /api/publish), where the gateway takes its HTTP publish",
  fill: "the server API's `batch` of `publish` commands (500 a request), where the gateway's are written straight into JetStream",
  kill_workers: "the Centrifugo process SIGKILLed and started again on the same port (one process, no workers; the memory engine loses its history)",
  recreate_stream:
    "the server API's `history_remove`: the next read of the channel makes a new stream with a new epoch (Centrifugo's memory engine keeps no stream to delete and create again)",
};

/** The Centrifugo configuration (JSON) of the side-by-side run: port, backend and the namespace `conf`. */
export function centrifugoConfig(port: number, backend: (path: string) => string): Record<string, unknown> {
  const proxy = (path: string) => ({ endpoint: backend(path), timeout: "5s", include_connection_meta: true });
  return {
    http_server: { address: "127.0.0.1", port },
    log: { level: "error" },
    http_api: { key: API_KEY },
    client: {
      token: { hmac_secret_key: SECRET, issuer: ISSUER, audience: AUDIENCE },
      allowed_origins: ["*"],
      proxy: { connect: { enabled: true, ...proxy("/connect") } },
    },
    channel: {
      proxy: { subscribe: proxy("/subscribe"), publish: proxy("/publish") },
      namespaces: [
        {
          name: "conf",
          presence: true,
          join_leave: true,
          history_size: 10_000,
          history_ttl: "600s",
          allow_recovery: true,
          allow_positioning: true,
          allowed_delta_types: ["fossil"],
          allow_presence_for_client: true,
          allow_history_for_client: true,
          subscribe_proxy_enabled: true,
          publish_proxy_enabled: true,
        },
      ],
    },
    rpc: { proxy: proxy("/rpc"), without_namespace: { proxy_enabled: true } },
  };
}

/** NATS-style matching of the gateway's token rights (`*` one token, `>` the rest) against a gateway channel. */
export function grants(patterns: readonly string[] | undefined, channel: string): boolean {
  const tokens = channel.split(".");
  return (patterns ?? [">"]).some((p) => {
    const want = p.split(".");
    for (const [i, w] of want.entries()) {
      if (w === ">") return tokens.length > i;
      if (i >= tokens.length || (w !== "*" && w !== tokens[i])) return false;
    }
    return want.length === tokens.length;
  });
}

/**
 * What the subscribe proxy's answers switch on. Behind a subscribe proxy Centrifugo ignores a client's own
 * `recoverable`, `positioned` and `join_leave` (only the namespace's `force_*` options or the answer's
 * `override` set them), so the backend forces all three, as the scenarios that ask for them expect.
 */
export const SUBSCRIBE_OVERRIDE = { force_recovery: { value: true }, force_positioning: { value: true }, force_push_join_leave: { value: true } };

/** The backend's answers: the gateway's token rights (carried in the token's `meta`) and the RPC hook of harness.ts. */
export function backendAnswer(c: HookCall): HookAnswer {
  const meta = (c.body.meta ?? {}) as { sub?: string[]; pub?: string[]; rpc?: string[] };
  const denied = { body: { error: { code: 103, message: "permission denied" } } };
  const channelOf = () => {
    const m = toGatewayChannel(String(c.body.channel));
    return m.ok ? m.name : "";
  };
  if (c.path === "/connect") return { body: { result: { user: "connect-hook" } } };
  if (c.path === "/subscribe") return grants(meta.sub, channelOf()) ? { body: { result: { override: SUBSCRIBE_OVERRIDE } } } : denied;
  if (c.path === "/publish") return grants(meta.pub, channelOf()) ? { body: { result: {} } } : denied;
  if (c.path === "/rpc") {
    const method = String(c.body.method);
    if (!(meta.rpc ?? []).includes(method)) return denied;
    return { body: { result: { data: method === "conf.echo" ? { method, user: c.body.user, data: c.body.data } : null } } };
  }
  return { body: { error: { code: 404, message: `no hook at ${c.path}` } } };
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address() as { port: number };
  await new Promise((r) => srv.close(r));
  return port;
}

/** The Centrifugo name of a gateway channel (`conf.x.y` → `conf:x.y`): the faults name gateway channels. */
function centrifugoName(channel: string): string {
  const m = toCentrifugoChannel(channel);
  if (!m.ok) throw new Error(`${channel} has no Centrifugo name: ${m.reason}`);
  return m.name;
}

/** What `binary` is: its module version from the Go build info (`go install` stamps none into `centrifugo version`), else its own answer. */
async function versionOf(binary: string): Promise<string> {
  const out = (cmd: string, args: string[]) =>
    new Promise<string>((resolve) => {
      const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "ignore"] });
      let text = "";
      p.stdout!.on("data", (d: Buffer) => (text += d.toString()));
      p.on("error", () => resolve(""));
      p.on("exit", () => resolve(text));
    });
  const mod = /\tmod\t(\S+)\t(v\S+)/.exec(await out("go", ["version", "-m", binary]));
  return mod ? `${mod[1]} ${mod[2]}` : (await out(binary, ["version"])).trim();
}

/** Starts `binary` (Centrifugo v6) with the side-by-side configuration behind a TCP proxy the faults can cut. */
export async function startCentrifugoHarness(binary: string): Promise<GatewayHarness & { readonly version: string }> {
  const backend = await HookBackend.start();
  backend.answer = backendAnswer;
  const dir = mkdtempSync(join(tmpdir(), "fgw-centrifugo-"));
  const port = await freePort();
  const config = join(dir, "config.json");
  writeFileSync(
    config,
    JSON.stringify(
      centrifugoConfig(port, (p) => backend.url(p)),
      null,
      2,
    ),
  );
  const base = `http://127.0.0.1:${port}`;
  let proc: ChildProcess | undefined;
  let output = "";

  const api = async (method: string, body: unknown): Promise<Record<string, unknown>> => {
    const r = await fetch(`${base}/api/${method}`, {
      method: "POST",
      headers: { "x-api-key": API_KEY, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const json = (await r.json()) as { result?: Record<string, unknown>; error?: { code: number; message: string } };
    if (!r.ok || json.error) throw new Error(`Centrifugo ${method}: HTTP ${r.status} ${JSON.stringify(json.error ?? json)}`);
    return json.result ?? {};
  };
  const start = async () => {
    output = "";
    const p = spawn(binary, ["--config", config], { stdio: ["ignore", "pipe", "pipe"] });
    const keep = (d: Buffer) => (output = (output + d.toString()).slice(-20_000));
    p.stdout!.on("data", keep);
    p.stderr!.on("data", keep);
    proc = p;
    await waitFor(
      async () => {
        if (p.exitCode !== null) throw new Error(`Centrifugo exited ${p.exitCode}: ${output.slice(-2000)}`);
        return (await api("info", {}).catch(() => undefined)) !== undefined;
      },
      { timeoutMs: 30_000, what: "Centrifugo to answer its server API" },
    );
  };
  const stop = async (signal: NodeJS.Signals) => {
    const p = proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const exited = new Promise((r) => p.once("exit", r));
    p.kill(signal);
    await exited;
  };
  const version = await versionOf(binary);
  await start();
  const proxy = await startTcpProxy({ host: "127.0.0.1", port });
  const publish = async (channel: string, data: unknown) => (await api("publish", { channel: centrifugoName(channel), data })).offset as number;
  const expires = (ttlSec?: number) => (ttlSec ? Math.floor(Date.now() / 1000) + ttlSec : "10m");

  const faults: Record<string, (step: Step) => unknown> = {
    cut: () => proxy.cut(),
    stall: () => proxy.stall(),
    refuse: () => proxy.refuse(true),
    accept: () => proxy.refuse(false),
    down: () => proxy.down(),
    up: () => proxy.up(),
    kill_workers: async () => {
      await stop("SIGKILL");
      proxy.cut();
      await start();
    },
    recreate_stream: (step) => api("history_remove", { channel: centrifugoName(String(step.channel ?? "")) }),
    fill: async (step) => {
      const [channel, from, count] = [centrifugoName(step.channel as string), step.from as number, step.count as number];
      for (let at = 0; at < count; at += FILL_BATCH) {
        const n = Math.min(FILL_BATCH, count - at);
        const commands = Array.from({ length: n }, (_, k) => ({ publish: { channel, data: { n: from + at + k } } }));
        await api("batch", { commands });
      }
    },
    wait: (step) => new Promise((r) => setTimeout(r, step.ms as number)),
  };
  return {
    version,
    wsUrl: `ws://127.0.0.1:${proxy.port}/connection/websocket`,
    // The gateway's rights (sub, pub, rpc) ride in the token's `meta`, which Centrifugo hands to its proxies.
    token: (spec: TokenSpec) =>
      sign({ meta: { sub: spec.sub ?? [">"], pub: spec.pub ?? [">"], rpc: spec.rpc ?? [] } }, { sub: spec.user ?? "conformance", exp: expires(spec.ttlSec) }),
    subToken: (spec: SubTokenSpec) => sign({ channel: spec.channel }, { sub: spec.user ?? "conformance", exp: expires(spec.ttlSec) }),
    publish,
    async fault(name: string, step: Step) {
      const fault = faults[name];
      if (!fault) throw new Error(`unknown fault ${name}`);
      await fault(step);
    },
    async reset() {
      proxy.refuse(false);
      proxy.cut();
      await proxy.up();
    },
    async close() {
      await proxy.close();
      await stop("SIGTERM");
      await backend.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
