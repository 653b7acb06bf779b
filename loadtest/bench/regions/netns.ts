// bench:regions' network namespace: the whole run (the three regions' nats-servers, their link proxies, the
// gateways and the measuring clients) goes into a namespace this bench creates, where `tc netem` on the
// namespace's own loopback delays the inter-region links only (stats.ts netemCommands). The host's interfaces
// are never touched. The outer process makes the namespace, checks that netem is permitted in it, runs this
// same script inside it, and removes it on every exit path (the run's end, a throw, SIGINT, SIGTERM, exit).
// Where namespaces or netem are not permitted, open() answers why; the bench then delays the links with the
// test kit's user-space proxies on loopback and says so in its report.
import { execFileSync, spawn } from "node:child_process";
import { netemCommands } from "./stats.js";

/** Set in the inner run: the namespace it runs in. */
export const NETNS_ENV = "FGW_BENCH_REGIONS_NETNS";

function run(cmd: string, args: readonly string[]): void {
  execFileSync(cmd, args, { stdio: ["ignore", "ignore", "pipe"], timeout: 10_000 });
}

function why(e: unknown): string {
  const s = (e as { stderr?: Buffer }).stderr?.toString().trim();
  return s || (e instanceof Error ? e.message : String(e));
}

/**
 * Makes the namespace and checks netem in it; `{skipped}` with the reason (and nothing left behind) when it
 * cannot. `runInside(argv)` runs this script in it and resolves with its exit code; `remove()` deletes it.
 */
export function openNamespace(script: string): { name: string; runInside(argv: readonly string[]): Promise<number>; remove(): void } | { skipped: string } {
  const name = `fgwrg${process.pid}`;
  let made = false;
  const remove = (): void => {
    if (!made) return;
    made = false;
    try {
      run("ip", ["netns", "del", name]);
    } catch {
      // already gone
    }
  };
  const steps: Array<[string, () => void]> = [
    ["ip netns add", () => (run("ip", ["netns", "add", name]), (made = true))],
    ["ip link set lo up", () => run("ip", ["-n", name, "link", "set", "lo", "up"])],
    ["tc qdisc add … netem", () => run("ip", ["netns", "exec", name, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"])],
    ["tc qdisc del", () => run("ip", ["netns", "exec", name, "tc", "qdisc", "del", "dev", "lo", "root"])],
  ];
  for (const [what, step] of steps) {
    try {
      step();
    } catch (e) {
      remove();
      return { skipped: `${what} is not permitted here (${why(e)})` };
    }
  }
  process.once("exit", remove);
  return {
    name,
    remove,
    runInside: (argv) =>
      new Promise((resolve, reject) => {
        const child = spawn("ip", ["netns", "exec", name, process.execPath, script, ...argv], {
          stdio: "inherit",
          env: { ...process.env, [NETNS_ENV]: name },
        });
        const forward = (sig: NodeJS.Signals) => () => child.kill(sig);
        const onInt = forward("SIGINT");
        const onTerm = forward("SIGTERM");
        process.on("SIGINT", onInt);
        process.on("SIGTERM", onTerm);
        child.once("error", reject);
        child.once("exit", (code, signal) => {
          process.off("SIGINT", onInt);
          process.off("SIGTERM", onTerm);
          resolve(code ?? (signal ? 130 : 1));
        });
      }),
  };
}

/** Inside the namespace: delays the packets to and from `ports` on loopback by `delayMs` (each way). */
export function delayPortsWithNetem(ports: readonly number[], delayMs: number): void {
  for (const args of netemCommands("lo", ports, delayMs)) run("tc", args);
}
