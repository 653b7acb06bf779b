// jetstream.md: the ratios between configurations measured in this run beside the users' own, then every row
// with the users' figure in a reference column, the flag translation and the commands run.
import type { Counts } from "./options.js";
import type { Target } from "./servers.js";
import { REFERENCE, SOURCES } from "./reference.js";
import { FLAG_TRANSLATION } from "./translation.js";
import type { Path, Row } from "./rows.js";
import { encryptionSection } from "./encryption.js";
import { LAYOUT_PAIRS } from "./layouts.js";
import { PUBS_PER_POD } from "./matrix.js";

export type RunMeta = {
  startedAt: Date;
  finishedAt: Date;
  quick: boolean;
  targets: Target[];
  cores: number;
  cpu: string;
  node: string;
  natscli: string;
  natsServer: string;
  counts: Counts;
  rounds: number;
  /** Highest and median 1-minute load average, sampled every 5 s during the run. */
  maxLoad: number;
  medianLoad: number;
  /** How seed 003's latency was added, or why netem was skipped. */
  latencyNote: string | null;
  /** The run's arguments (absent in runs saved before they were kept). */
  argv?: string[];
};

/** A ratio between two workloads, each side measured on the same target with the same client in one run. */
export type RatioSpec = { label: string; num: string; den: string; side: "value" | "sub"; clusterOnly?: boolean };

/** The chart's label for a ratio: the table's without the seed and the parenthesis, unless that repeats another. */
export const shortLabel = (s: RatioSpec): string =>
  s.label
    .replace(/^seed \d{3}: /, "")
    .replace(/ \((per publisher|pub per publisher|10 KB sync, pub per publisher|Pub\/Sub|sub)\)$/, "")
    .replace(/ \(per subscriber\)$/, ", per subscriber");

export const RATIOS: readonly RatioSpec[] = [
  { label: "stream per app / one stream, 3 pods (10 KB sync, pub per publisher)", num: "000.app-10k-r3-sync-3", den: "000.one-10k-r3-sync-3", side: "value" },
  { label: "stream per app / one stream, 6 pods", num: "000.app-10k-r3-sync-6", den: "000.one-10k-r3-sync-6", side: "value" },
  { label: "6 pods / 3 pods, one stream (per publisher)", num: "000.one-10k-r3-sync-6", den: "000.one-10k-r3-sync-3", side: "value" },
  { label: "async / sync publish, 10 KB (per publisher)", num: "000.one-10k-r3-async-3", den: "000.one-10k-r3-sync-3", side: "value" },
  { label: "1 KB / 10 KB, async (per publisher)", num: "000.one-1k-r3-async-3", den: "000.one-10k-r3-async-3", side: "value" },
  { label: "memory / file, 1 KB sync (per publisher)", num: "000.one-1k-r3-sync-6-mem", den: "000.one-1k-r3-sync-6", side: "value" },
  { label: "memory / file, 1 KB sync (per subscriber)", num: "000.one-1k-r3-sync-6-mem", den: "000.one-1k-r3-sync-6", side: "sub" },
  { label: "R3 / R1, 1 KB sync (per publisher)", num: "000.one-1k-r3-sync-6", den: "000.one-1k-r1-sync-6", side: "value", clusterOnly: true },
  { label: "R3 / R1, 512 B async (per publisher)", num: "000.one-512-r3-async-6", den: "000.one-512-r1-async-6", side: "value", clusterOnly: true },
  { label: "seed 001: 5 publishers / 1 publisher (Pub/Sub)", num: "001.push-group-5", den: "001.push-group-1", side: "value" },
  { label: "seed 002: R3 / R1, dedup, 2 subscribers (sub)", num: "002.dedup-r3", den: "002.dedup-r1", side: "value", clusterOnly: true },
  { label: "seed 002: 8 / 1 consumers (sub)", num: "002.scale-8", den: "002.scale-1", side: "value" },
  { label: "seed 002: 64 / 1 consumers (sub)", num: "002.scale-64", den: "002.scale-1", side: "value" },
  { label: "seed 003: sequential / pipelined, +0 ms", num: "003.sequential-0", den: "003.pipelined-0", side: "value" },
  { label: "seed 003: sequential / pipelined, +1 ms", num: "003.sequential-1", den: "003.pipelined-1", side: "value" },
  { label: "seed 003: sequential / pipelined, +10 ms", num: "003.sequential-10", den: "003.pipelined-10", side: "value" },
  { label: "seed 003: sequential, +10 ms / +0 ms", num: "003.sequential-10", den: "003.sequential-0", side: "value" },
  { label: "seed 003: pipelined, +10 ms / +0 ms", num: "003.pipelined-10", den: "003.pipelined-0", side: "value" },
];

/** The columns of the ratio table: where and through which client. */
export const COLUMNS: ReadonlyArray<{ target: Target; path: Path }> = [
  { target: "cluster", path: "nats bench" },
  { target: "cluster", path: "nats.js" },
  { target: "single", path: "nats bench" },
  { target: "single", path: "nats.js" },
  { target: "cluster", path: "gateway WS" },
  { target: "single", path: "gateway WS" },
];

/** A figure over the rounds of a run: the median and the range. */
export type Spread = { med: number; min: number; max: number; n: number };

export function spreadOf(xs: readonly number[]): Spread | undefined {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (!s.length) return undefined;
  const m = s.length >> 1;
  return { med: s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2, min: s[0]!, max: s[s.length - 1]!, n: s.length };
}

/** A row as the tables show it: the round with the median headline, and the headline's spread over the rounds. */
export type Rep = Row & { spread?: Spread };

export function representatives(rows: readonly Row[]): Rep[] {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const k = `${r.workload}|${r.target}|${r.path}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  return [...groups.values()].map((g) => {
    const ok = g.filter((r) => r.status === "ok" && r.value !== undefined).sort((a, b) => a.value! - b.value!);
    if (!ok.length) return g.find((r) => r.status === "failed") ?? g[0]!;
    return { ...ok[(ok.length - 1) >> 1]!, spread: spreadOf(ok.map((r) => r.value!)) };
  });
}

const ok = (rows: readonly Row[], workload: string, target: Target, path: Path): Row | undefined =>
  rows.find((r) => r.workload === workload && r.target === target && r.path === path && r.status === "ok");

const sideOf = (r: Row, side: "value" | "sub"): number | undefined => (side === "sub" ? r.sub?.avg : r.value);

/** a/b per round in which both rows were measured. */
function perRound(rows: readonly Row[], a: [string, Path], b: [string, Path], target: Target, side: "value" | "sub"): number[] {
  const rounds = [...new Set(rows.map((r) => r.round))];
  return rounds.flatMap((round) => {
    const inRound = rows.filter((r) => r.round === round);
    const x = ok(inRound, a[0], target, a[1]);
    const y = ok(inRound, b[0], target, b[1]);
    const u = x && sideOf(x, side);
    const v = y && sideOf(y, side);
    return u !== undefined && v !== undefined && v > 0 ? [u / v] : [];
  });
}

/** Our ratio on one target and client: the median of the per-round ratios. */
export function ourRatio(rows: readonly Row[], spec: RatioSpec, target: Target, path: Path): Spread | undefined {
  if (spec.clusterOnly && target !== "cluster") return undefined;
  return spreadOf(perRound(rows, [spec.num, path], [spec.den, path], target, spec.side));
}

export function usersRatio(spec: RatioSpec): number | undefined {
  const n = REFERENCE[spec.num];
  const d = REFERENCE[spec.den];
  const a = spec.side === "sub" ? n?.sub : n?.value;
  const b = spec.side === "sub" ? d?.sub : d?.value;
  return a !== undefined && b !== undefined ? a / b : undefined;
}

const f0 = (n: number | undefined): string => (n === undefined || !Number.isFinite(n) ? "—" : Math.round(n).toLocaleString("en-US"));
const f2 = (n: number | undefined): string => (n === undefined || !Number.isFinite(n) ? "—" : n.toFixed(2));
const f3 = (n: number | undefined): string =>
  n === undefined || !Number.isFinite(n) ? "—" : n < 1 ? n.toFixed(3) : n < 100 ? n.toFixed(2) : Math.round(n).toLocaleString("en-US");
const where = (r: Row): string => `${r.target === "cluster" ? "3-node cluster" : "single node"} · ${r.path}`;
const ref = (w: string): string => REFERENCE[w]?.text ?? "—";
const label = (w: string): string => REFERENCE[w]?.config ?? w;
/** A ratio's median with its range over the rounds. */
const fs = (s: Spread | undefined): string => (!s ? "—" : s.n > 1 ? `${f2(s.med)} (${f2(s.min)}–${f2(s.max)})` : f2(s.med));
/** A row's headline over the rounds (min–max), for the tables' last column. */
const rounds = (r: Rep): string => (r.spread && r.spread.n > 1 ? `${f3(r.spread.min)}–${f3(r.spread.max)} (${r.spread.n})` : "");
const pct = (v: number | undefined): string => (v === undefined ? "—" : `${Math.round(v)} %`);
const cpu = (r: Row): string => pct(r.toolCpuPct);
const srv = (r: Row): string => pct(r.serverCpuPct);
const failedCell = (r: Row): string => `${r.status}${r.note ? `: ${r.note.replace(/\|/g, "\\|")}` : ""}`;

function byWorkload(rows: readonly Rep[], prefix: string): Map<string, Rep[]> {
  const m = new Map<string, Rep[]>();
  for (const r of rows.filter((x) => x.workload.startsWith(prefix))) m.set(r.workload, [...(m.get(r.workload) ?? []), r]);
  return m;
}

function ratioSection(rows: readonly Row[], meta: RunMeta): string[] {
  const cols = COLUMNS.filter((c) => rows.some((r) => r.target === c.target && r.path === c.path && r.seed !== "003"));
  const out = [
    "## Ratios between configurations (this run) beside the users'",
    "",
    `Each of our ratios divides two rows measured in the same round of this run on the same servers with the same client, so the machine's speed cancels; the cell is the median over the ${meta.rounds} round${meta.rounds > 1 ? "s" : ""}${meta.rounds > 1 ? " with the lowest and highest round in brackets: other work on this shared box moves single rows, and the range shows by how much" : ""}. The users' ratio divides their own figures (sources in the tables below). On the single node every stream is R1, so its columns compare R1 configurations. Seed 003 rows run on their own server (see its section) and appear in the single-node columns.`,
    "",
    `| ratio | users' | ${cols.map((c) => `${c.target === "cluster" ? "cluster" : "single"} · ${c.path}`).join(" | ")} |`,
    `|---|---:|${cols.map(() => "---:").join("|")}|`,
  ];
  for (const s of RATIOS) {
    const ours = cols.map((c) => fs(ourRatio(rows, s, c.target, c.path)));
    if (ours.every((x) => x === "—")) continue;
    out.push(`| ${s.label} | ${f2(usersRatio(s))} | ${ours.join(" | ")} |`);
  }
  // The same publishes through three clients (publish paths) and the seed 002 KV clients.
  const cross: Array<[string, string, Path, Path]> = [
    ["publish, sequential: nats.js / nats bench", "paths.sequential", "nats.js", "nats bench"],
    ["publish, sequential: gateway HTTP / nats.js", "paths.sequential", "gateway HTTP", "nats.js"],
    ["publish, pipelined: nats.js / nats bench", "paths.pipelined", "nats.js", "nats bench"],
    ["publish, pipelined: gateway HTTP / nats.js", "paths.pipelined", "gateway HTTP", "nats.js"],
    ["KV put: nats.js / nats bench", "002.kv-put", "nats.js", "nats bench"],
    ["KV watch: nats.js / nats CLI", "002.kv-watch", "nats.js", "nats CLI"],
  ];
  const targets = (["cluster", "single"] as const).filter((t) => rows.some((r) => r.target === t && r.seed === "paths"));
  if (targets.length) {
    out.push(
      "",
      "Clients against each other (same workload, same target, same run):",
      "",
      `| ratio | ${targets.join(" | ")} |`,
      `|---|${targets.map(() => "---:").join("|")}|`,
    );
    for (const [l, w, a, b] of cross) {
      const cells = targets.map((t) => fs(spreadOf(perRound(rows, [w, a], [w, b], t, "value"))));
      out.push(`| ${l} | ${cells.join(" | ")} |`);
    }
  }
  return out;
}

function rateCell(r: Row, side: "pub" | "sub"): string {
  const x = r[side];
  if (!x) return "—";
  return x.min === x.max ? f0(x.avg) : `${f0(x.avg)} (${f0(x.min)}–${f0(x.max)})`;
}

function matrixSection(rows: readonly Rep[]): string[] {
  const out = [
    "## Seed 000: the matrix",
    "",
    "Per pod 2 publishers and 10 subscribers (ordered consumers, each receiving every message of its pod's subject), each pod on its own subject; all pods at once. The users' \"Avg pub msg/sec\" is the mean of their per-publisher averages over the pods, which is what the first figure column is here (with the slowest and fastest publisher).",
    "",
    "| users' configuration | where · client | configuration here | pub msgs/s per publisher: avg (min–max) | sub msgs/s per subscriber: avg (min–max) | all publishers msgs/s | busiest Node tool process, % of a core | nats-server CPU, % of a core | headline over the rounds: min–max (n) | users' figure |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const [w, rs] of byWorkload(rows, "000.")) {
    rs.forEach((r, i) => {
      const cells =
        r.status === "ok" ? [rateCell(r, "pub"), rateCell(r, "sub"), f0(r.pub?.aggregate), cpu(r), srv(r), rounds(r)] : [failedCell(r), "", "", "", "", ""];
      out.push(`| ${i === 0 ? label(w) : ""} | ${where(r)} | ${r.config} | ${cells.join(" | ")} | ${i === 0 ? ref(w) : ""} |`);
    });
  }
  return out;
}

/** The layout pairs through the gateway: app/one per pod count and target, for publishes and deliveries. */
function gatewayLayoutSection(rows: readonly Row[], reps: readonly Rep[]): string[] {
  const out = [
    "## Seed 000 through the gateway: one stream for all vs a stream per app prefix",
    "",
    "The users' layout rows with the gateway in the path: per pod 2 publisher processes (`pub-cluster --target gateway-ws --sync`, each publish awaiting its ack) and 10 gateway WebSocket subscribers (`sub-cluster`, each expecting every message of its pod's channel), each pod on its own channel (`app1.bench1.subj.v1`, `app2.bench2.subj.v1`, …). Each row starts its own gateway (2 workers) on the target's servers with fresh streams: with one stream every channel is in the gateway's stream; with a stream per app a namespaces file gives each app prefix (`app1`, `app2`, …) a namespace with a stream of its own, same storage and replicas. Deliveries/s: a pod's deliveries (10 subscribers × its messages) over the time from its subscribers' first message to their last, as nats bench times subscribers, added over the pods. The ratios divide the two layouts' rows of the same round, and are the gateway's counterpart of the users' stream-per-app gain.",
    "",
    "| where | pods | one stream: pub msgs/s per publisher | stream per app | app / one | users' app / one | one stream: deliveries/s | stream per app | app / one | gateway CPU, % of a core: one / app |",
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const target of ["cluster", "single"] as const) {
    for (const pair of LAYOUT_PAIRS) {
      const one = reps.find((r) => r.workload === pair.one && r.target === target && r.path === "gateway WS");
      const app = reps.find((r) => r.workload === pair.app && r.target === target && r.path === "gateway WS");
      if (!one && !app) continue;
      const cell = (r: Rep | undefined, v: (r: Rep) => number | undefined): string => (!r ? "—" : r.status !== "ok" ? failedCell(r) : f0(v(r)));
      const pods = [one, app].find((r) => r?.pub)?.pub;
      const ratio = (side: "value" | "sub"): string => fs(ourRatio(rows, { label: "", num: pair.app, den: pair.one, side }, target, "gateway WS"));
      const users = usersRatio({ label: "", num: pair.app, den: pair.one, side: "value" });
      out.push(
        `| ${target === "cluster" ? "3-node cluster" : "single node"} | ${pods ? pods.clients / PUBS_PER_POD : "—"}${pods && pods.clients / PUBS_PER_POD !== pair.pods ? ` (users ${pair.pods})` : ""} | ${cell(one, (r) => r.value)} | ${cell(app, (r) => r.value)} | ${ratio("value")} | ${f2(users)} | ${cell(one, (r) => r.sub?.aggregate)} | ${cell(app, (r) => r.sub?.aggregate)} | ${ratio("sub")} | ${pct(one?.gatewayCpuPct)} / ${pct(app?.gatewayCpuPct)} |`,
      );
    }
  }
  return out;
}

function pushSection(rows: readonly Rep[]): string[] {
  const out = [
    "## Seed 001: durable push consumer with a deliver group, max-pending 10",
    "",
    "The users' figure is their table's \"msgs/sec (NATS Bench)\", a range over runs per cloud; their sample output puts it near the combined Pub/Sub line, which is the headline here (publishers' and subscribers' aggregate rates added, as the old nats bench printed it).",
    "",
    "| users' configuration | where · client | configuration here | pub msgs/s | sub msgs/s | Pub/Sub msgs/s | busiest Node tool process, % of a core | nats-server CPU, % of a core | headline over the rounds: min–max (n) | users' figure |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const [w, rs] of byWorkload(rows, "001.")) {
    rs.forEach((r, i) => {
      const cells =
        r.status === "ok" ? [f0(r.pub?.aggregate), f0(r.sub?.aggregate), f0(r.value), cpu(r), srv(r), rounds(r)] : [failedCell(r), "", "", "", "", ""];
      out.push(`| ${i === 0 ? label(w) : ""} | ${where(r)} | ${r.config} | ${cells.join(" | ")} | ${i === 0 ? ref(w) : ""} |`);
    });
  }
  return out;
}

function clusterSeedSection(rows: readonly Rep[]): string[] {
  const out = [
    "## Seed 002: replicated stream, consumer scaling, KV",
    "",
    "| users' configuration | where · client | configuration here | pub msgs/s | sub msgs/s (aggregate) | per subscriber: avg (min–max) | busiest Node tool process, % of a core | nats-server CPU, % of a core | headline over the rounds: min–max (n) | users' figure |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const [w, rs] of byWorkload(rows, "002.dedup")) {
    rs.forEach((r, i) => {
      const cells =
        r.status === "ok" ? [f0(r.pub?.aggregate), f0(r.sub?.aggregate), rateCell(r, "sub"), cpu(r), srv(r), rounds(r)] : [failedCell(r), "", "", "", "", ""];
      out.push(`| ${i === 0 ? label(w) : ""} | ${where(r)} | ${r.config} | ${cells.join(" | ")} | ${i === 0 ? ref(w) : ""} |`);
    });
  }
  const scale = byWorkload(rows, "002.scale-");
  if (scale.size) {
    const cols = COLUMNS.filter((c) => [...scale.values()].flat().some((r) => r.target === c.target && r.path === c.path));
    out.push(
      "",
      "Consumer scaling: subscribers' aggregate msgs/s (1 async publisher with dedup, every subscriber on one durable consumer; the users' subscribers shared a durable push consumer).",
      "",
    );
    out.push(`| consumers | users' TPS (Sub) | ${cols.map((c) => `${c.target} · ${c.path}`).join(" | ")} |`, `|---:|---:|${cols.map(() => "---:").join("|")}|`);
    for (const [w] of scale) {
      const cells = cols.map((c) => {
        const r = rows.find((x) => x.workload === w && x.target === c.target && x.path === c.path);
        return r ? (r.status === "ok" ? f0(r.value) : r.status) : "—";
      });
      out.push(`| ${w.split("-")[1]} | ${f0(REFERENCE[w]?.value)} | ${cells.join(" | ")} |`);
    }
  }
  const kv = byWorkload(rows, "002.kv");
  if (kv.size) {
    out.push(
      "",
      "KV: puts/s of one putter (awaiting each put), and the rate at which one watcher saw the puts of a concurrent nats bench putter, with the watcher's peak memory (the users warned that watches are memory hungry).",
      "",
    );
    out.push(
      "| users' configuration | where · client | configuration here | figure | put latency avg / p99 ms | watcher peak RSS | nats-server CPU, % of a core | headline over the rounds: min–max (n) | users' figure |",
      "|---|---|---|---:|---:|---:|---:|---:|---|",
    );
    for (const [w, rs] of kv) {
      rs.forEach((r, i) => {
        const cells =
          r.status === "ok"
            ? [
                `${f0(r.value)} ${r.workload === "002.kv-put" ? "puts/s" : "updates/s"}`,
                r.latency ? `${f3(r.latency.avg)} / ${f3(r.latency.p99)}` : "—",
                r.rssMb !== undefined ? `${r.rssMb.toFixed(0)} MB` : "—",
                srv(r),
                rounds(r),
              ]
            : [failedCell(r), "", "", "", ""];
        out.push(`| ${i === 0 ? label(w) : ""} | ${where(r)} | ${r.config} | ${cells.join(" | ")} | ${i === 0 ? ref(w) : ""} |`);
      });
    }
  }
  return out;
}

function latencySection(rows: readonly Rep[], meta: RunMeta): string[] {
  const out = [
    "## Seed 003: publish latency with added network delay",
    "",
    meta.latencyNote ?? "",
    "",
    "Sequential = each publish awaits its ack before the next (the users' V1, sync over async); pipelined = 100 publishes in flight (their V2, async I/O). \"ms per publish\" is the mean ack wait for sequential runs and the run's time divided by its messages for pipelined ones; the latency columns are per message (send to ack) except nats bench's pipelined rows, which time whole batches and are left out. The users printed Avg / Min / Max without a unit, so compare their V1/V2 and +10 ms/+0 ms ratios with ours (ratio table above), not the values.",
    "",
    "| case | client | network | ms per publish | avg | min | max | p50 | p99 ms | ms per publish over the rounds: min–max (n) | users' figure |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
  ];
  for (const r of rows.filter((x) => x.seed === "003")) {
    const net = r.config.split(";")[0];
    if (r.status !== "ok") {
      out.push(`| ${r.workload} | ${r.path} | ${net} | ${failedCell(r)} | | | | | | | |`);
      continue;
    }
    const l = r.latency;
    out.push(
      `| ${label(r.workload)} | ${r.path} | ${net} | ${f3(r.value)} | ${f3(l?.avg)} | ${f3(l?.min)} | ${f3(l?.max)} | ${f3(l?.p50)} | ${f3(l?.p99)} | ${rounds(r)} | ${ref(r.workload)} |`,
    );
  }
  return out;
}

function pathsSection(rows: readonly Rep[]): string[] {
  const out = [
    "## The same publishes through nats bench, nats.js and the gateway",
    "",
    "2 publishers, 1 KB, into one stream created by the gateway (file storage, the target's highest replica count, republished on core NATS for live delivery as the gateway always does). nats.js = `pub-cluster --target jetstream`; gateway HTTP = `pub-cluster --target gateway-http` against the gateway (1 worker) on the same servers. The users have no figure for this; it shows what the Node client and the gateway cost next to the Go tool.",
    "",
    "| mode | where · client | configuration here | msgs/s (all publishers) | ack avg ms | p50 | p99 | max | busiest Node tool process, % of a core | gateway CPU, % of a core | nats-server CPU, % of a core | headline over the rounds: min–max (n) |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ];
  for (const r of rows.filter((x) => x.seed === "paths")) {
    const l = r.latency;
    const cells =
      r.status === "ok"
        ? [f0(r.value), f3(l?.avg), f3(l?.p50), f3(l?.p99), f3(l?.max), cpu(r), pct(r.gatewayCpuPct), srv(r), rounds(r)]
        : [failedCell(r), "", "", "", "", "", "", "", ""];
    out.push(`| ${r.workload.split(".")[1]} | ${where(r)} | ${r.config} | ${cells.join(" | ")} |`);
  }
  return out;
}

function countsSection(rows: readonly Row[], meta: RunMeta): string[] {
  const c = meta.counts;
  const has = (seed: Row["seed"]): boolean => rows.some((r) => r.seed === seed);
  return [
    "## How the users' runs were scaled to this machine",
    "",
    ...(has("000")
      ? [
          `- Seed 000: pods, publishers and subscribers per pod as the users had them${c.podDivisor > 1 ? ` divided by ${c.podDivisor} (--quick)` : ""} (3 or 6 pods × 2 publishers + 10 subscribers), each pod a pair of processes here instead of a Kubernetes pod; messages per pod ${c.matrix10k.toLocaleString("en-US")} where they sent 10,000 and ${c.matrix1m.toLocaleString("en-US")} where they sent 1,000,000, so a full run takes minutes on two shared cores. The users' three NATS servers each had a CPU of their own; here three servers, the load tools and the Node processes share ${meta.cores}.`,
        ]
      : []),
    ...(has("001")
      ? [`- Seed 001: 5 or 1 publishers and 5 subscribers as theirs, ${c.pushGroup.toLocaleString("en-US")} messages (their table: 10,000).`]
      : []),
    ...(has("002")
      ? [
          `- Seed 002: 1 publisher and 2 subscribers as theirs; ${c.dedup.toLocaleString("en-US")} messages per dedup run (theirs 100,000), ${c.scaling.toLocaleString("en-US")} per consumer-scaling step; ${c.kv.toLocaleString("en-US")} KV puts (theirs 100,000).`,
        ]
      : []),
    ...(has("003")
      ? [
          `- Seed 003: ${c.latencySequential.toLocaleString("en-US")} sequential and ${c.latencyPipelined.toLocaleString("en-US")} pipelined publishes per delay (the users' message counts are not in their notes).`,
        ]
      : []),
    ...(has("paths")
      ? [`- Publish paths: ${c.pathsSequential.toLocaleString("en-US")} sequential and ${c.pathsPipelined.toLocaleString("en-US")} pipelined messages.`]
      : []),
    ...(has("enc")
      ? [
          `- Encryption at rest: ${c.encSync.toLocaleString("en-US")} sync and ${c.encAsync.toLocaleString("en-US")} async publishes, ${c.encReplay.toLocaleString("en-US")} messages replayed, per cipher.`,
        ]
      : []),
  ];
}

function translationSection(): string[] {
  return [
    "## The users' nats bench flags in natscli v0.5.1",
    "",
    "| users' command or flag | v0.5.1 | note |",
    "|---|---|---|",
    ...FLAG_TRANSLATION.map((t) => `| ${t.old} | ${t.now} | ${t.note} |`),
  ];
}

function detailsSection(rows: readonly Row[]): string[] {
  const out = ["## Commands and output per row (the median round)", ""];
  for (const r of rows) {
    out.push(`<details><summary>${r.workload} · ${where(r)} · ${r.status === "ok" ? `${r.metric}: ${f3(r.value)}` : failedCell(r)}</summary>`, "", "```");
    out.push(...r.commands, ...(r.lines.length ? ["", ...r.lines] : []));
    out.push("```", "", "</details>", "");
  }
  return out;
}

export function renderMarkdown(rows: readonly Row[], meta: RunMeta, png = "jetstream.png"): string {
  const t = (d: Date): string => d.toISOString().slice(11, 16);
  const failed = rows.filter((r) => r.status === "failed").length;
  const reps = representatives(rows);
  const lines = [
    "# The users' JetStream evaluation, rerun here",
    "",
    `Measured ${meta.startedAt.toISOString().slice(0, 10)} (${t(meta.startedAt)}–${t(meta.finishedAt)} UTC) by \`npm run bench -- jetstream${meta.argv ? (meta.argv.length ? ` ${meta.argv.join(" ")}` : "") : meta.quick ? " --quick" : ""}\`: nats bench from natscli ${meta.natscli}, nats-server ${meta.natsServer}, Node ${meta.node}; targets: ${meta.targets.map((x) => (x === "cluster" ? "local 3-node cluster" : "single nats-server")).join(" and ")} (the test kit's, temporary stores, fsync at the server's default interval).`,
    "",
    `**Machine:** ${meta.cores} cores (${meta.cpu}), shared by the nats-server processes, the load tools and whatever else ran on the box (1-minute load average sampled every 5 s: median ${meta.medianLoad.toFixed(1)}, highest ${meta.maxLoad.toFixed(1)}; above ${meta.cores} the box was oversubscribed). The users' figures come from other hardware: ${SOURCES.join("; ")}. Read them as reference; the comparison that holds is between configurations, as ratios measured in the same run.`,
    "",
    `${meta.rounds > 1 ? `The whole evaluation ran ${meta.rounds} times in a row (rounds); every table shows each row's median round, and the ratios are medians of per-round ratios. ` : ""}${rows.length} rows over all rounds: ${rows.filter((r) => r.status === "ok").length} measured, ${rows.filter((r) => r.status === "skipped").length} skipped, ${failed} failed.`,
    "",
    ...ratioSection(rows, meta),
    "",
    ...(reps.some((r) => r.seed === "000") ? [...matrixSection(reps), ""] : []),
    ...(reps.some((r) => r.seed === "000" && r.path === "gateway WS") ? [...gatewayLayoutSection(rows, reps), ""] : []),
    ...(reps.some((r) => r.seed === "001") ? [...pushSection(reps), ""] : []),
    ...(reps.some((r) => r.seed === "002") ? [...clusterSeedSection(reps), ""] : []),
    ...(reps.some((r) => r.seed === "003") ? [...latencySection(reps, meta), ""] : []),
    ...(reps.some((r) => r.seed === "paths") ? [...pathsSection(reps), ""] : []),
    ...(reps.some((r) => r.seed === "enc") ? [...encryptionSection(rows, reps), ""] : []),
    ...countsSection(rows, meta),
    "",
    ...(rows.some((r) => r.path === "nats bench") ? [...translationSection(), ""] : []),
    `![ratios, seed 000 publish rates and seed 003 latencies](${png})`,
    "",
    ...detailsSection(reps),
  ];
  return lines.join("\n") + "\n";
}
