// The kernel's memory, read before and after a bench opens its sockets: /proc/meminfo (Slab, page tables),
// /proc/net/sockstat (TCP sockets and their buffer pages) and /proc/slabinfo (the caches a socket lives in).
// Measured, not estimated: per socket is the delta over the sockets opened.
import { readFileSync } from "node:fs";

/** The slab caches a TCP socket and its file take: the socket, its inode, its file and dentry, its epoll entry. */
export const SOCKET_CACHES = ["TCP", "sock_inode_cache", "filp", "dentry", "eventpoll_epi", "eventpoll_pwq", "skbuff_head_cache", "kmalloc-64", "kmalloc-192"];

export type KernelMem = {
  /** Slab (reclaimable and not), page tables, kernel stacks and free memory, in bytes. */
  slabB: number;
  unreclaimableSlabB: number;
  pageTablesB: number;
  availableB: number;
  /** TCP sockets in use in this network namespace, and the pages their buffers hold (the whole machine's). */
  tcpInUse: number;
  tcpBufferB: number;
  /** Bytes held by each of SOCKET_CACHES (objects × object size), when /proc/slabinfo is readable. */
  caches: Record<string, number>;
};

const meminfoKB = (text: string, key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? NaN);

export function readKernelMem(): KernelMem {
  const mi = readFileSync("/proc/meminfo", "utf8");
  const ss = readFileSync("/proc/net/sockstat", "utf8");
  const tcp = /^TCP: inuse (\d+) .* mem (\d+)/m.exec(ss);
  const caches: Record<string, number> = {};
  try {
    for (const line of readFileSync("/proc/slabinfo", "utf8").split("\n").slice(2)) {
      const f = line.split(/\s+/);
      if (SOCKET_CACHES.includes(f[0]!)) caches[f[0]!] = Number(f[2]) * Number(f[3]);
    }
  } catch {
    /* slabinfo needs root: the caches stay out, the totals do not */
  }
  return {
    slabB: meminfoKB(mi, "Slab") * 1024,
    unreclaimableSlabB: meminfoKB(mi, "SUnreclaim") * 1024,
    pageTablesB: meminfoKB(mi, "PageTables") * 1024,
    availableB: meminfoKB(mi, "MemAvailable") * 1024,
    tcpInUse: Number(tcp?.[1] ?? NaN),
    tcpBufferB: Number(tcp?.[2] ?? NaN) * 4096,
    caches,
  };
}

export type KernelPerSocket = {
  sockets: number;
  /** Slab plus TCP buffer pages gained, per socket (both ends of a loopback connection are sockets here). */
  perSocketB: number;
  slabPerSocketB: number;
  buffersPerSocketB: number;
  /** Each cache's gain per socket. */
  caches: Record<string, number>;
};

/** What `after` holds more than `before`, per socket opened in between. */
export function perSocket(before: KernelMem, after: KernelMem, sockets: number): KernelPerSocket {
  const slab = after.slabB - before.slabB;
  const buffers = after.tcpBufferB - before.tcpBufferB;
  const caches: Record<string, number> = {};
  for (const [k, v] of Object.entries(after.caches)) caches[k] = (v - (before.caches[k] ?? 0)) / sockets;
  return { sockets, perSocketB: (slab + buffers) / sockets, slabPerSocketB: slab / sockets, buffersPerSocketB: buffers / sockets, caches };
}

/**
 * Calls `onLow` once when the machine's available memory falls under `minB` (checked every second): a bench
 * stops before it pushes the machine into the OOM killer. Returns the stop function.
 */
export function memoryGuard(minB: number, onLow: (availableB: number) => void): () => void {
  let fired = false;
  const t = setInterval(() => {
    const a = meminfoKB(readFileSync("/proc/meminfo", "utf8"), "MemAvailable") * 1024;
    if (!fired && a < minB) {
      fired = true;
      onLow(a);
    }
  }, 1000);
  t.unref();
  return () => clearInterval(t);
}
