// Which source address each client connects from. Every TCP connection from one source address to one
// server address and port needs an ephemeral port of its own (ip_local_port_range: 32768–60999, 28,232
// ports, by default), so one host cannot hold more connections than that to one server address. On loopback
// every 127.x.y.z address is this machine's, so the tool spreads connections over source addresses
// 127.0.0.2, 127.0.0.3, … by itself, leaving 127.0.0.1's ports to other programs; to other hosts it can only
// warn (or use the addresses given with --local-address).
import { readFileSync } from "node:fs";

/** Share of the ephemeral range one source address is given: the rest stays for other programs. */
export const RANGE_SHARE = 0.85;

export type PortRange = { low: number; high: number };

/** The kernel's ephemeral port range (Linux), or the usual default where it cannot be read. */
export function ephemeralRange(): PortRange {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (low! > 0 && high! >= low!) return { low: low!, high: high! };
  } catch {
    // not Linux
  }
  return { low: 32768, high: 60999 };
}

export const rangeSize = (r: PortRange): number => r.high - r.low + 1;

export function isLoopback(host: string): boolean {
  return host === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Where the clients of one server host come from. With `firstPort`, spread clients also get a source port:
 * client j of an address uses firstPort + j, the same numbers on every address (a bind to a given port is one
 * lookup in the kernel, where a bind to port 0 searches the range, slower and slower as it fills up).
 */
export type HostPlan = {
  host: string;
  clients: number;
  sources: readonly (string | undefined)[];
  firstPort?: number;
  lastPort?: number;
  perSource?: number;
  serverPort?: number;
};

export type AddressPlan = { hosts: readonly HostPlan[]; notes: readonly string[]; warnings: readonly string[] };

/**
 * Plans source addresses for `total` clients spread round-robin over `hosts` (client g goes to host
 * g mod H). `local` are addresses given by the user: used round-robin for every host as they are.
 */
export function planAddresses(
  hosts: readonly string[],
  port: number,
  total: number,
  local: readonly string[],
  range: PortRange = ephemeralRange(),
): AddressPlan {
  const perPair = Math.floor(rangeSize(range) * RANGE_SHARE);
  const notes: string[] = [];
  const warnings: string[] = [];
  const plans = hosts.map((host, h): HostPlan => {
    const clients = Math.floor(total / hosts.length) + (h < total % hosts.length ? 1 : 0);
    if (local.length > 0) {
      if (clients / local.length > perPair)
        warnings.push(
          `${fmt(clients)} clients to ${host}:${port} over ${local.length} source address${local.length === 1 ? "" : "es"} is over ${fmt(perPair)} per address (the ephemeral range ${range.low}–${range.high} has ${fmt(rangeSize(range))} ports): expect EADDRNOTAVAIL`,
        );
      return { host, clients, sources: local };
    }
    if (clients <= perPair) return { host, clients, sources: [undefined] };
    const n = Math.ceil(clients / perPair);
    if (!isLoopback(host)) {
      warnings.push(
        `${fmt(clients)} clients to ${host}:${port} from one source address are more than its ${fmt(rangeSize(range))} ephemeral ports (${range.low}–${range.high}) allow: expect EADDRNOTAVAIL; give this host ${n} addresses with --local-address, or use more load hosts`,
      );
      return { host, clients, sources: [undefined] };
    }
    if (n > 250) throw new Error(`${total} clients need more than 250 loopback source addresses`);
    const sources = Array.from({ length: n }, (_, i) => `127.0.0.${i + 2}`);
    notes.push(
      `spreading ${fmt(clients)} connections to ${host}:${port} over ${n} source addresses ${sources[0]}–${sources[n - 1]} ` +
        `(~${fmt(Math.ceil(clients / n))} each, source ports from ${range.low} up on each): one source/destination address pair has ${fmt(rangeSize(range))} ephemeral ports (${range.low}–${range.high}), and 127.0.0.1's are left to other programs`,
    );
    return { host, clients, sources, firstPort: range.low, lastPort: range.high, perSource: Math.ceil(clients / n), serverPort: port };
  });
  return { hosts: plans, notes, warnings };
}

/**
 * Host, source address and (when spreading) source port of client number `g` (over all processes). The
 * server's own port is skipped (a wildcard listener owns it on every address); `sparePort` is another port of
 * the range above the block the clients use, for a client whose port turned out to be taken (EADDRINUSE).
 */
export function addressOf(plan: AddressPlan, g: number): { host: string; localAddress: string | undefined; localPort?: number; sparePort?: number } {
  const H = plan.hosts.length;
  const hp = plan.hosts[g % H]!;
  const k = Math.floor(g / H);
  const S = hp.sources.length;
  const localAddress = hp.sources[k % S];
  if (hp.firstPort === undefined || localAddress === undefined) return { host: hp.host, localAddress };
  const j = Math.floor(k / S);
  let port = hp.firstPort + j;
  if (hp.serverPort !== undefined && port >= hp.serverPort) port++;
  const spareFrom = hp.firstPort + (hp.perSource ?? 0) + 1;
  const spareCount = Math.max(1, (hp.lastPort ?? 60999) - spareFrom + 1);
  let spare = spareFrom + (j % spareCount);
  if (spare === hp.serverPort) spare = spare === spareFrom ? spare + 1 : spare - 1;
  return { host: hp.host, localAddress, localPort: port, sparePort: spare };
}

/** The process's open-files limit (soft), or null where it cannot be read. */
export function openFilesLimit(): number | null {
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync("/proc/self/limits", "utf8"));
    return m ? (m[1] === "unlimited" ? Infinity : Number(m[1])) : null;
  } catch {
    return null;
  }
}

const fmt = (n: number): string => n.toLocaleString("en-US");
