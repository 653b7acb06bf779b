// A two-namespace network for seed 003: nats-server in one network namespace, the clients in another, joined
// by a veth pair with `tc netem` delay on both ends (+d ms each way, 2d round trip, as the users' "1 ms on the
// interface (2 ms round-trip)"). Everything is created here and removed on close, on Ctrl-C and on exit;
// traffic stays inside the two namespaces. Where namespaces, veth or netem are not permitted, open() answers
// why instead.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NATS_SERVER_BIN } from "#testkit/nats-server.js";
import { waitFor } from "#testkit/wait.js";

const SERVER_ADDR = "10.213.0.1";
const CLIENT_ADDR = "10.213.0.2";
const PORT = 4222;

export type NetemLab = {
  /** Runs a command in the clients' namespace: prefix it with this. */
  clientPrefix: readonly string[];
  serverUrl: string;
  /** Sets the delay added on each end of the veth pair (each direction). */
  setDelay(ms: number): void;
  close(): Promise<void>;
};

function ip(args: readonly string[]): void {
  execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"], timeout: 10_000 });
}

function stderrOf(e: unknown): string {
  const s = (e as { stderr?: Buffer }).stderr?.toString().trim();
  return s || (e instanceof Error ? e.message : String(e));
}

/** Sets up the namespaces and the server, or returns the reason it cannot be done here. */
export async function openNetemLab(): Promise<NetemLab | { skipped: string }> {
  const id = `${process.pid}`;
  const ns = { server: `fgwjs${id}s`, client: `fgwjs${id}c` };
  const veth = { server: `fjs${id}s`, client: `fjs${id}c` };
  const made: string[] = [];
  const teardown = (): void => {
    for (const n of made.splice(0)) {
      try {
        ip(["netns", "del", n]);
      } catch {
        // already gone
      }
    }
    try {
      ip(["link", "del", veth.server]);
    } catch {
      // moved into a namespace (and gone with it) or never made
    }
  };
  const steps: Array<[string, () => void]> = [
    [
      "ip netns add",
      () => {
        ip(["netns", "add", ns.server]);
        made.push(ns.server);
        ip(["netns", "add", ns.client]);
        made.push(ns.client);
      },
    ],
    ["ip link add … type veth", () => ip(["link", "add", veth.server, "type", "veth", "peer", "name", veth.client])],
    [
      "ip link set … netns",
      () => {
        ip(["link", "set", veth.server, "netns", ns.server]);
        ip(["link", "set", veth.client, "netns", ns.client]);
      },
    ],
    [
      "ip addr add",
      () => {
        ip(["-n", ns.server, "addr", "add", `${SERVER_ADDR}/30`, "dev", veth.server]);
        ip(["-n", ns.client, "addr", "add", `${CLIENT_ADDR}/30`, "dev", veth.client]);
      },
    ],
    [
      "ip link set up",
      () => {
        for (const [n, v] of [
          [ns.server, veth.server],
          [ns.client, veth.client],
        ] as const) {
          ip(["-n", n, "link", "set", v, "up"]);
          ip(["-n", n, "link", "set", "lo", "up"]);
        }
      },
    ],
    [
      "tc qdisc add … netem",
      () => {
        ip(["netns", "exec", ns.server, "tc", "qdisc", "add", "dev", veth.server, "root", "netem", "delay", "0ms"]);
        ip(["netns", "exec", ns.client, "tc", "qdisc", "add", "dev", veth.client, "root", "netem", "delay", "0ms"]);
      },
    ],
  ];
  for (const [what, step] of steps) {
    try {
      step();
    } catch (e) {
      teardown();
      return { skipped: `${what} is not permitted here (${stderrOf(e)})` };
    }
  }
  const onSignal = (): void => {
    teardown();
    process.exit(130);
  };
  process.once("SIGINT", onSignal);
  process.once("exit", teardown);

  const dir = mkdtempSync(join(tmpdir(), "fgw-netem-"));
  let server: ChildProcess | undefined;
  let log = "";
  const close = async (): Promise<void> => {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise<void>((r) => server!.once("exit", () => r()));
      server.kill("SIGTERM");
      const t = setTimeout(() => server!.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(t);
    }
    teardown();
    process.off("SIGINT", onSignal);
    process.off("exit", teardown);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    server = spawn("ip", ["netns", "exec", ns.server, NATS_SERVER_BIN, "-a", SERVER_ADDR, "-p", String(PORT), "-js", "-sd", join(dir, "store")], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    server.stderr!.on("data", (d: Buffer) => (log = (log + d.toString()).slice(-4000)));
    await waitFor(
      () => {
        if (server!.exitCode !== null) throw new Error(`nats-server in ${ns.server} exited ${server!.exitCode}: ${log}`);
        return /Server is ready/.test(log) || undefined;
      },
      { timeoutMs: 15_000, what: "nats-server in the server namespace" },
    );
  } catch (e) {
    await close();
    throw e;
  }
  return {
    clientPrefix: ["ip", "netns", "exec", ns.client],
    serverUrl: `nats://${SERVER_ADDR}:${PORT}`,
    setDelay: (ms) => {
      ip(["netns", "exec", ns.server, "tc", "qdisc", "change", "dev", veth.server, "root", "netem", "delay", `${ms}ms`]);
      ip(["netns", "exec", ns.client, "tc", "qdisc", "change", "dev", veth.client, "root", "netem", "delay", `${ms}ms`]);
    },
    close,
  };
}
