// A bench with many sockets takes a network namespace of its own when it can (root, `unshare`): loopback only,
// so its hundreds of thousands of sockets take no ports from other programs on the machine.
import { spawnSync } from "node:child_process";

/**
 * Runs this bench again inside `unshare -n` (loopback up) and returns its exit code; null when already inside,
 * when `--no-netns` was given, or when this process may not make a namespace (then it runs where it is).
 */
export function inOwnNetns(argv: readonly string[], log: (s: string) => void): number | null {
  if (process.env.FGW_IN_NETNS || argv.includes("--no-netns") || process.getuid?.() !== 0) return null;
  const probe = spawnSync("unshare", ["-n", "true"], { stdio: "ignore" });
  if (probe.status !== 0) return null;
  log("running in a network namespace of its own (unshare -n; loopback only)");
  const r = spawnSync("unshare", ["-n", "bash", "-c", `ip link set lo up && exec "${process.execPath}" "${process.argv[1]}" "$@"`, "bash", ...argv], {
    stdio: "inherit",
    env: { ...process.env, FGW_IN_NETNS: "1" },
  });
  return r.status ?? 1;
}
