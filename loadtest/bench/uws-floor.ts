// bench:million's baseline, measured in the same run: what bare uWebSockets.js (loadtest/peers/uws/server.mjs,
// one process, no broker; each socket subscribed to one topic) holds per connection, with the same native
// clients. The gateway's RSS per connection is reported against it.
import { join, resolve } from "node:path";
import { ROOT, until } from "./common.js";
import { procStat, progressLines, settledRss } from "./scale-kit.js";
import { runNode, SUB_CLI, type Proc } from "../compare/proc.js";

const SERVER = resolve(ROOT, "loadtest/peers/uws/server.mjs");
/** One process holds at most this many here (20,000 open files a process). */
export const FLOOR_MAX_CLIENTS = 15_000;

export type Floor = { clients: number; idleMB: number; perConnB: number };

const rssOf = (pid: number): number => procStat(pid)?.rssBytes ?? 0;

/**
 * Connects `clients` native clients to a bare uWS server (run with the gateway's node options, `nodeArgs`) and
 * returns its RSS per connection once it settles.
 */
export async function uwsFloor(clients: number, work: string, nodeArgs: string[]): Promise<Floor> {
  const server = runNode([...nodeArgs, SERVER, "--port", "0"]);
  let sub: Proc | undefined;
  try {
    const port = await until(() => Number(/ready (\d+)/.exec(server.out())?.[1]) || undefined, 30_000, "the bare uWS server");
    const pid = server.child.pid!;
    const idle = rssOf(pid);
    const progress = join(work, "floor-progress.jsonl");
    sub = runNode([
      SUB_CLI,
      "--engine",
      "native",
      "-c",
      "1",
      "-n",
      String(clients),
      "-p",
      String(port),
      "--channel",
      "floor",
      "-d",
      "600",
      "--idle",
      "0",
      "--progress",
      progress,
      "--quiet",
    ]);
    const s = sub;
    await until(
      () => {
        if (s.child.exitCode !== null) throw new Error(`sub-cluster exited early: ${s.out().slice(-1500)}`);
        return (progressLines(progress).at(-1)?.connected ?? 0) >= clients || undefined;
      },
      120_000,
      `${clients} clients on the bare uWS server`,
    );
    const last = await settledRss(() => [pid]);
    return { clients, idleMB: idle / 1048576, perConnB: (last - idle) / clients };
  } finally {
    await sub?.stop(5_000);
    await server.stop(5_000);
  }
}
