// Which process holds the server side of a TCP connection: /proc/net/tcp gives the socket inode of the
// connection (local port = server port, remote port = client port); /proc/<pid>/fd links name the inodes.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const ESTABLISHED = "01";

/** Inodes of established IPv4/IPv6 connections whose local port is `localPort` (and remote port, if given). */
export function connectionInodes(localPort: number, remotePort?: number): string[] {
  const out: string[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== ESTABLISHED) continue;
      const lp = parseInt(f[1]!.split(":")[1]!, 16);
      const rp = parseInt(f[2]!.split(":")[1]!, 16);
      if (lp === localPort && (remotePort === undefined || rp === remotePort)) out.push(f[9]!);
    }
  }
  return out;
}

/** The pids among `pids` that hold any of the socket inodes. */
export function pidsHoldingInodes(pids: number[], inodes: string[]): number[] {
  const want = new Set(inodes.map((i) => `socket:[${i}]`));
  return pids.filter((pid) => {
    try {
      return readdirSync(`/proc/${pid}/fd`).some((fd) => {
        try {
          return want.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
        } catch {
          return false;
        }
      });
    } catch {
      return false;
    }
  });
}
