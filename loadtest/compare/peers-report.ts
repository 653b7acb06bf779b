// peers.md and peers.png for compare:peers: one table per workload row, a chart of server CPU per delivery
// and latency per server.
import type { StageSummary } from "./stages.js";

export const SERVERS = ["gateway", "socketio", "centrifuge", "centrifugo", "uws", "uws2"] as const;
export type ServerName = (typeof SERVERS)[number];

export const SERVER_LABEL: Record<ServerName, string> = {
  gateway: "this gateway (2 workers, JetStream, embedded nats-server)",
  socketio: "Socket.IO 4.8 + @socket.io/redis-adapter (2 node:cluster workers, redis-server)",
  centrifuge: "centrifuge v0.40.1 (Go, memory broker)",
  centrifugo: "Centrifugo v6.9.1 (Go, memory engine, no history, anonymous clients)",
  uws: "bare uWebSockets.js (1 process, no broker): the floor",
  uws2: "bare uWebSockets.js (2 processes on one port, as the gateway's 2 workers; no broker): the floor at the gateway's shape",
};
const SHORT: Record<ServerName, string> = {
  gateway: "gateway",
  socketio: "Socket.IO",
  centrifuge: "centrifuge",
  centrifugo: "Centrifugo",
  uws: "bare uWS",
  uws2: "bare uWS ×2",
};
const COLORS: Record<ServerName, string> = {
  gateway: "#2f6fb0",
  socketio: "#c8553d",
  centrifuge: "#5a9e4b",
  centrifugo: "#9b6bb5",
  uws: "#8a8a8a",
  uws2: "#b5b5b5",
};

export type PeerRow = {
  server: ServerName;
  clients: number;
  rate: number;
  seconds: number;
  ok: boolean;
  notes: string[];
  connectS?: number;
  connected?: number;
  received?: number;
  expected?: number;
  lost?: number;
  meanMs?: number;
  hmeanMs?: number;
  p50Ms?: number;
  p99Ms?: number;
  maxMs?: number;
  /** The server's whole process tree (brokers included), % of one core, over publishing and drain. */
  serverCpuPct?: number;
  serverUsPerDelivery?: number;
  /** The broker's share (nats-server, redis-server) of serverUsPerDelivery. */
  brokerUsPerDelivery?: number;
  /** Busiest sub-cluster process, % of one core. */
  toolCpuPct?: number;
  rssBeforeMB?: number;
  rssIdleMB?: number;
  rssLoadMB?: number;
  stopReason?: string;
  wallS?: number;
  loadAvg?: number;
  /** The gateway's own stage metrics over the row (loadtest/compare/stages.ts). */
  stages?: StageSummary;
};

export type PeersMeta = {
  startedAt: string;
  finishedAt: string;
  cores: number;
  cpuModel: string;
  node: string;
  clients: number;
  procs: number;
  seconds: number;
  quick: boolean;
};

const ms = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? "—" : v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0));
const int = (v: number | undefined): string => (v === undefined || !Number.isFinite(v) ? "—" : v.toLocaleString("en-US"));

export function renderPeersMarkdown(rows: readonly PeerRow[], m: PeersMeta): string {
  const L: string[] = [];
  L.push("# compare:peers — this gateway next to the servers users would pick instead");
  L.push("");
  L.push(
    `Measured ${m.startedAt.slice(0, 16).replace("T", " ")}–${m.finishedAt.slice(11, 16)} UTC by \`npm run compare:peers${m.quick ? " -- --quick" : ""}\` on ${m.cores} cores (${m.cpuModel}), Node ${m.node}. ` +
      `The same clients and publisher for every server: \`sub-cluster -c ${m.procs} -n ${Math.ceil(m.clients / m.procs)}\` (lean engine, speaking each server's protocol) and one \`pub-cluster\` process publishing ` +
      `${m.seconds} s at each rate over one WebSocket, acked; servers one after another, each started fresh. Everything shares the two cores, so the server's CPU per delivery is the comparable figure; ` +
      "latencies include waiting for a CPU behind the clients.",
  );
  L.push("");
  L.push(
    "Server CPU is its whole process tree read from `/proc` (user + system), brokers included (nats-server for the gateway, redis-server for Socket.IO), " +
      "from the first publish to the end of the row, divided by the deliveries counted. RSS: the tree's resident memory with every client connected and idle, and its peak while publishing.",
  );
  L.push("");
  for (const rate of [...new Set(rows.map((r) => r.rate))]) {
    const group = rows.filter((r) => r.rate === rate);
    const c = group[0]!.clients;
    L.push(`## ${int(c)} clients × ${rate} msg/s (${int(c * rate)} deliveries/s offered)`);
    L.push("");
    L.push(
      "| server | delivered / expected | lost | p50 ms | p99 ms | MEAN ms | HARMONIC MEAN ms | MAX ms | server CPU µs / delivery (broker's part) | server CPU | RSS idle → under load MB | load avg |",
    );
    L.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (const r of group) {
      if (!r.ok) {
        L.push(`| ${SERVER_LABEL[r.server]} | failed: ${r.notes.join("; ").replace(/\|/g, "/")} | | | | | | | | | | |`);
        continue;
      }
      L.push(
        `| ${SERVER_LABEL[r.server]} | ${int(r.received)} / ${int(r.expected)} | ${int(r.lost)} | ${ms(r.p50Ms)} | **${ms(r.p99Ms)}** | **${ms(r.meanMs)}** | ${ms(r.hmeanMs)} | ${ms(r.maxMs)} | **${r.serverUsPerDelivery!.toFixed(2)}** (${r.brokerUsPerDelivery!.toFixed(2)}) | ${r.serverCpuPct!.toFixed(0)} % | ${r.rssIdleMB!.toFixed(0)} → ${r.rssLoadMB!.toFixed(0)} | ${r.loadAvg!.toFixed(1)} |`,
      );
    }
    const notes = group.filter((r) => r.notes.length && r.ok);
    const ratios = cpuRatios(group);
    if (notes.length || ratios.length) L.push("");
    for (const r of notes) L.push(`- ${SHORT[r.server]}: ${r.notes.join("; ")}`);
    for (const x of ratios) L.push(`- Gateway CPU per delivery ÷ ${SHORT[x.floor]}'s: **${x.ratio.toFixed(2)}×**`);
    L.push("");
  }
  L.push("![server CPU per delivery and latency per server](peers.png)");
  L.push("");
  return L.join("\n");
}

/** The gateway's server CPU per delivery over each bare uWS floor's in the same group (those that ran). */
export function cpuRatios(group: readonly PeerRow[]): { floor: ServerName; ratio: number }[] {
  const gw = group.find((r) => r.server === "gateway" && r.ok);
  if (!gw?.serverUsPerDelivery) return [];
  return (["uws", "uws2"] as const).flatMap((floor) => {
    const f = group.find((r) => r.server === floor && r.ok);
    return f?.serverUsPerDelivery ? [{ floor, ratio: gw.serverUsPerDelivery! / f.serverUsPerDelivery }] : [];
  });
}

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;");

export function renderPeersSvg(rows: readonly PeerRow[], m: PeersMeta): string {
  const W = 1100;
  const rates = [...new Set(rows.map((r) => r.rate))];
  const servers = SERVERS.filter((s) => rows.some((r) => r.server === s));
  const ok = rows.filter((r) => r.ok);
  const out: string[] = [];
  const left = 80;
  const right = W - 20;
  const gw = (right - left) / rates.length;
  const bw = Math.min(40, (gw - 40) / servers.length);
  // Panel 1: server CPU µs per delivery, linear.
  const top1 = 70,
    bottom1 = 300;
  const maxCpu = Math.max(1, ...ok.map((r) => r.serverUsPerDelivery ?? 0)) * 1.15;
  const y1 = (v: number): number => bottom1 - (v / maxCpu) * (bottom1 - top1);
  out.push(
    `<text x="${left}" y="${top1 - 14}" font-size="15" font-weight="bold">Server CPU per delivery, µs (whole process tree, broker included; lower is better)</text>`,
  );
  for (let t = 0; t <= maxCpu; t += maxCpu > 20 ? 5 : 2)
    out.push(
      `<line x1="${left}" x2="${right}" y1="${y1(t)}" y2="${y1(t)}" stroke="#e4e4e4"/><text x="${left - 6}" y="${y1(t) + 4}" font-size="11" text-anchor="end">${t}</text>`,
    );
  // Panel 2: p50 and p99 latency, log scale.
  const top2 = 380,
    bottom2 = 620;
  const lat = ok.flatMap((r) => [r.p50Ms ?? NaN, r.p99Ms ?? NaN]).filter((x) => Number.isFinite(x) && x > 0);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...lat, 1))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...lat, 10))));
  const y2 = (v: number): number => bottom2 - ((Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (bottom2 - top2);
  out.push(`<text x="${left}" y="${top2 - 14}" font-size="15" font-weight="bold">Delivery latency, ms, log scale: p50 (solid) and p99 (outline)</text>`);
  for (let d = lo; d <= hi; d *= 10)
    out.push(
      `<line x1="${left}" x2="${right}" y1="${y2(d)}" y2="${y2(d)}" stroke="#e4e4e4"/><text x="${left - 6}" y="${y2(d) + 4}" font-size="11" text-anchor="end">${d >= 1 ? d : d.toFixed(1)}</text>`,
    );
  rates.forEach((rate, i) => {
    const x0 = left + i * gw + (gw - bw * servers.length) / 2;
    const clients = rows.find((r) => r.rate === rate)!.clients;
    for (const [yb, yy] of [
      [bottom1, 0],
      [bottom2, 0],
    ] as const)
      out.push(
        `<text x="${left + i * gw + gw / 2}" y="${yb + 18 + yy}" font-size="12" text-anchor="middle">${clients.toLocaleString("en-US")} clients × ${rate} msg/s</text>`,
      );
    servers.forEach((s, j) => {
      const r = ok.find((x) => x.rate === rate && x.server === s);
      const x = x0 + j * bw;
      if (!r) return;
      const c = r.serverUsPerDelivery!;
      out.push(
        `<rect x="${x + 2}" y="${y1(c)}" width="${bw - 4}" height="${bottom1 - y1(c)}" fill="${COLORS[s]}"/><text x="${x + bw / 2}" y="${y1(c) - 4}" font-size="11" text-anchor="middle">${c.toFixed(1)}</text>`,
      );
      const p99 = r.p99Ms!,
        p50 = r.p50Ms!;
      out.push(`<rect x="${x + 2}" y="${y2(p99)}" width="${bw - 4}" height="${bottom2 - y2(p99)}" fill="none" stroke="${COLORS[s]}" stroke-width="2"/>`);
      out.push(`<rect x="${x + 6}" y="${y2(p50)}" width="${bw - 12}" height="${bottom2 - y2(p50)}" fill="${COLORS[s]}"/>`);
      out.push(`<text x="${x + bw / 2}" y="${y2(p99) - 4}" font-size="10" text-anchor="middle">${ms(p99)}</text>`);
    });
  });
  out.push(
    `<line x1="${left}" x2="${right}" y1="${bottom1}" y2="${bottom1}" stroke="#333"/><line x1="${left}" x2="${right}" y1="${bottom2}" y2="${bottom2}" stroke="#333"/>`,
  );
  const legendY = 660;
  servers.forEach((s, i) =>
    out.push(
      `<rect x="${left}" y="${legendY + i * 20}" width="14" height="12" fill="${COLORS[s]}"/><text x="${left + 22}" y="${legendY + i * 20 + 11}" font-size="12">${esc(SERVER_LABEL[s])}</text>`,
    ),
  );
  const H = legendY + servers.length * 20 + 20;
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="DejaVu Sans, Arial, sans-serif">
<rect width="100%" height="100%" fill="#fff"/>
<text x="${W / 2}" y="24" font-size="16" text-anchor="middle" font-weight="bold">${esc(`compare:peers — same clients and publisher, ${m.cores} shared cores, ${m.startedAt.slice(0, 10)}`)}</text>
${out.join("\n")}
</svg>`;
}
