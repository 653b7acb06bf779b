// Which process holds the server side of a TCP connection: /proc/net/tcp gives the socket inode of the
// connection (local port = server port, remote port = client port); /proc/<pid>/fd links name the inodes.
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

const ESTABLISHED = "01";

type TcpSocket = { localPort: number; remotePort: number; inode: string };

/** Established IPv4/IPv6 connections of this host (/proc/net/tcp and tcp6). */
function establishedSockets(): TcpSocket[] {
  const out: TcpSocket[] = [];
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
      out.push({ localPort: parseInt(f[1]!.split(":")[1]!, 16), remotePort: parseInt(f[2]!.split(":")[1]!, 16), inode: f[9]! });
    }
  }
  return out;
}

/** Inodes of established IPv4/IPv6 connections whose local port is `localPort` (and remote port, if given). */
export function connectionInodes(localPort: number, remotePort?: number): string[] {
  return establishedSockets()
    .filter((s) => s.localPort === localPort && (remotePort === undefined || s.remotePort === remotePort))
    .map((s) => s.inode);
}

/** The server side of every established connection to `port`: its inode and the client's port. */
export function serverSockets(port: number): { inode: string; clientPort: number }[] {
  return establishedSockets()
    .filter((s) => s.localPort === port)
    .map((s) => ({ inode: s.inode, clientPort: s.remotePort }));
}

/** The pids among `pids` that hold any of the socket inodes. */
export function pidsHoldingInodes(pids: number[], inodes: string[]): number[] {
  const want = new Set(inodes.map((i) => `socket:[${i}]`));
  return pids.filter((pid) => {
    try {
      return readdirSync(`/proc/${pid}/fd`).some((fd) => want.has(linkOf(pid, fd)));
    } catch {
      return false;
    }
  });
}

/** How many established connections to `port` each of `pids` holds the server side of (/proc/net/tcp read once). */
export function connectionsPerPid(pids: number[], port: number): Map<number, number> {
  const sockets = serverSockets(port);
  return new Map(pids.map((pid) => [pid, portsHeld(pid, sockets).length]));
}

/** The client ports of the established connections to `port` whose server side `pid` holds. */
export function clientPortsHeldBy(pid: number, port: number): number[] {
  return portsHeld(pid, serverSockets(port));
}

function portsHeld(pid: number, sockets: { inode: string; clientPort: number }[]): number[] {
  let held: Set<string>;
  try {
    held = new Set(readdirSync(`/proc/${pid}/fd`).map((fd) => linkOf(pid, fd)));
  } catch {
    return [];
  }
  return sockets.filter((s) => held.has(`socket:[${s.inode}]`)).map((s) => s.clientPort);
}

function linkOf(pid: number, fd: string): string {
  try {
    return readlinkSync(`/proc/${pid}/fd/${fd}`);
  } catch {
    return "";
  }
}
