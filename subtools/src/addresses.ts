// Which source address each client connects from. Every TCP connection from one source address to one
// server address and port needs an ephemeral port of its own (ip_local_port_range: 32768–60999, 28,232
// ports, by default), so one host cannot hold more connections than that to one server address. On loopback
// every 127.x.y.z address is this machine's, so the tool spreads connections over source addresses
// 127.0.0.2, 127.0.0.3, … by itself, leaving 127.0.0.1's ports to other programs; to other hosts it can only
// warn (or use the addresses given with --local-address).
//
// Spread clients bind an explicit source port, taken outside the ephemeral range. Two kernel facts decide
// this: a port bound explicitly (on any address) is one the kernel no longer picks for any connect, so planned
// ports inside the range would starve every other program's connections (the million attempt of 2026-11-28:
// `curl` got EADDRNOTAVAIL); and letting the kernel pick at connect (IP_BIND_ADDRESS_NO_PORT) searches the
// range from one offset per address pair, one lookup per port already in use, which took half of both cores
// at 570,000 connections. An explicit port is one lookup. A client whose planned port is taken (EADDRINUSE:
// a listener on it, or its own earlier connection in TIME_WAIT) lets the kernel pick instead.
import { readFileSync } from "node:fs";

/** Share of the ephemeral range one source address is given: the rest stays for other programs. */
export const RANGE_SHARE = 0.85;
/** Share of the bound-port range one source address is planned for: the rest covers ports listeners hold. */
export const BOUND_SHARE = 0.95;

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

/**
 * The unprivileged ports outside the ephemeral range (the larger side of it), where spread clients bind their
 * planned source ports; undefined when fewer than 1,000 are left (the kernel then picks every port).
 */
export function boundPortRange(ephemeral: PortRange): PortRange | undefined {
  const below = { low: 1024, high: ephemeral.low - 1 };
  const above = { low: ephemeral.high + 1, high: 65535 };
  const best = rangeSize(below) >= rangeSize(above) ? below : above;
  return rangeSize(best) >= 1000 ? best : undefined;
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Where the clients of one server host come from. With `firstPort`, spread clients also get a source port:
 * client j of an address uses firstPort + j (the server's port skipped), the same numbers on every address,
 * all outside the ephemeral range (see the top of this file).
 */
export type HostPlan = {
  host: string;
  clients: number;
  sources: readonly (string | undefined)[];
  firstPort?: number;
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
  const bound = boundPortRange(range);
  // Spread over loopback addresses, each takes as many clients as its planned ports allow.
  const perSpread = bound ? Math.floor(rangeSize(bound) * BOUND_SHARE) : perPair;
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
    if (!isLoopback(host)) {
      const n = Math.ceil(clients / perPair);
      warnings.push(
        `${fmt(clients)} clients to ${host}:${port} from one source address are more than its ${fmt(rangeSize(range))} ephemeral ports (${range.low}–${range.high}) allow: expect EADDRNOTAVAIL; give this host ${n} addresses with --local-address, or use more load hosts`,
      );
      return { host, clients, sources: [undefined] };
    }
    const n = Math.ceil(clients / perSpread);
    if (n > 250) throw new Error(`${total} clients need more than 250 loopback source addresses`);
    const sources = Array.from({ length: n }, (_, i) => `127.0.0.${i + 2}`);
    notes.push(
      `spreading ${fmt(clients)} connections to ${host}:${port} over ${n} source addresses ${sources[0]}–${sources[n - 1]} ` +
        `(~${fmt(Math.ceil(clients / n))} each, ${bound ? `source ports from ${bound.low} up on each, outside the ephemeral range` : "source ports picked by the kernel"}): one source/destination address pair has ${fmt(rangeSize(range))} ephemeral ports (${range.low}–${range.high}), and 127.0.0.1's are left to other programs`,
    );
    if (!bound) return { host, clients, sources };
    return { host, clients, sources, firstPort: bound.low, serverPort: port };
  });
  return { hosts: plans, notes, warnings };
}

/**
 * Host, source address and (when spreading) source port of client number `g` (over all processes). The
 * server's own port is skipped (a wildcard listener owns it on every address). A client whose port turns out
 * to be taken (EADDRINUSE) connects from its address with the port the kernel picks.
 */
export function addressOf(plan: AddressPlan, g: number): { host: string; localAddress: string | undefined; localPort?: number } {
  const H = plan.hosts.length;
  const hp = plan.hosts[g % H]!;
  const k = Math.floor(g / H);
  const S = hp.sources.length;
  const localAddress = hp.sources[k % S];
  if (hp.firstPort === undefined || localAddress === undefined) return { host: hp.host, localAddress };
  const j = Math.floor(k / S);
  let port = hp.firstPort + j;
  if (hp.serverPort !== undefined && port >= hp.serverPort) port++;
  return { host: hp.host, localAddress, localPort: port };
}

const fmt = (n: number): string => n.toLocaleString("en-US");
