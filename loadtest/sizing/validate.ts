// `npm run capacity -- validate [--points 10000,100000,1000000]`: predicts what bench:million will measure at
// each point from the costs in loadtest/results/ (read once, before any of these runs), then runs it and
// compares: gateway RSS, kernel memory and the gateway's CPU at the steady rate, each within 20 %. Writes
// loadtest/results/capacity-validation.md (and .json, rows by point, so points can be measured on different days).
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { parseArgs } from "node:util";
import type { MillionResult } from "../bench/million-report.js";
import { errorsOf, rateText } from "../bench/million-report.js";
import { readCosts } from "./costs.js";
import { predictBench, type BenchPrediction } from "./model.js";

const PER_PROCESS = 18_000;
const TOLERANCE = 0.2;

export type Measured = { gatewayRssMB: number; kernelMB: number; steadyCpuPct: number; rate: number; errors: number; load: string; at: string };
export type ValidationRow = { clients: number; predicted: BenchPrediction; measured: Measured; costsFrom: string; report: string };

export const measuredOf = (r: MillionResult): Measured => ({
  gatewayRssMB: r.rss.connectedMB,
  kernelMB: (r.kernel.perSocketB * r.kernel.sockets) / 1048576,
  steadyCpuPct: r.steady.gatewayCpuPct,
  rate: r.steady.rate,
  errors: errorsOf(r),
  load: r.load,
  at: r.at,
});

/** (predicted − measured) / measured. */
export const errorOf = (predicted: number, measured: number): number => (predicted - measured) / measured;

const f = (n: number, d = 0): string => n.toLocaleString("en-US", { maximumFractionDigits: d, minimumFractionDigits: d });
const e = (p: number, m: number): string => {
  const x = errorOf(p, m);
  return `${x >= 0 ? "+" : ""}${f(x * 100, 1)} %${Math.abs(x) > TOLERANCE ? " ✗" : ""}`;
};

export function validationTable(rows: ValidationRow[]): string {
  const sorted = [...rows].sort((a, b) => a.clients - b.clients);
  return [
    "# The capacity model against bench:million",
    "",
    "Written by `npm run capacity -- validate --points …`: for each point, the model (loadtest/sizing/model.ts) predicts from the costs in",
    "loadtest/results/ (read before any of the points ran; the file is named per row) what bench:million will measure on this machine, then",
    "the bench runs (`npm run bench -- million --clients N`) and the two are compared. Error = (predicted − measured) / measured; ✗ beyond 20 %.",
    "",
    "| clients | workers | gateway RSS, MB: predicted / measured / error | kernel memory, MB: predicted / measured / error | steady rate held | gateway CPU at that rate, % of a core: predicted / measured / error | errors | load | costs from | report |",
    "|---:|---:|---|---|---:|---|---:|---|---|---|",
    ...sorted.map((r) => {
      const p = r.predicted;
      const m = r.measured;
      return (
        `| ${f(r.clients)} | ${p.workers} | ${f(p.gatewayRssMB)} / ${f(m.gatewayRssMB)} / ${e(p.gatewayRssMB, m.gatewayRssMB)} | ` +
        `${f(p.kernelMB)} / ${f(m.kernelMB)} / ${e(p.kernelMB, m.kernelMB)} | ${rateText(m.rate)} | ${f(p.steadyCpuPct, 1)} / ${f(m.steadyCpuPct, 1)} / ${e(p.steadyCpuPct, m.steadyCpuPct)} | ` +
        `${m.errors} | ${m.load} | ${r.costsFrom} | ${r.report} |`
      );
    }),
    "",
  ].join("\n");
}

export async function runValidation(argv: string[], dirs: { root: string; results: string }): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      points: { type: "string", default: "10000,100000" },
      steady: { type: "string", default: "60" },
      workers: { type: "string" },
      "keep-as-million": { type: "boolean" },
      ramp: { type: "string" },
    },
  });
  const points = values.points.split(",").map((p) => Number(p.replace(/_/g, "")));
  if (points.some((p) => !Number.isInteger(p) || p < 1)) throw new Error(`--points must be whole numbers, not ${values.points}`);
  const vdir = join(dirs.results, "validation");
  const outOf = (n: number): string => join(vdir, `million-${n}.json`);
  const read = readCosts(dirs.results, dirs.root, points.map(outOf));
  if ("missing" in read) throw new Error(`figures missing:\n${read.missing.join("\n")}`);
  const costsFrom = read.sources[0]!.file;
  // --workers: the gateway's worker count at every point (default bench:million's, one per 18,000 clients).
  const workersAt = (n: number): number => (values.workers ? Number(values.workers) : Math.max(2, Math.ceil(n / PER_PROCESS)));
  const predictions = points.map((n) => predictBench(read.costs, n, workersAt(n), 1));
  for (const p of predictions)
    console.log(
      `[validate] predicted at ${f(p.clients)} clients (${p.workers} workers), from ${costsFrom}: gateway RSS ${f(p.gatewayRssMB)} MB, kernel ${f(p.kernelMB)} MB, CPU ${f(p.steadyCpuPct, 1)} %`,
    );
  mkdirSync(vdir, { recursive: true });
  const jsonFile = join(dirs.results, "capacity-validation.json");
  const rows: ValidationRow[] = existsSync(jsonFile) ? (JSON.parse(readFileSync(jsonFile, "utf8")) as ValidationRow[]) : [];
  let ok = true;
  for (const p of predictions) {
    const out = outOf(p.clients).replace(/\.json$/, ".md");
    const r = spawnSync(
      process.execPath,
      [
        join(dirs.root, "dist/loadtest/kit/cli.js"),
        "million",
        "--clients",
        String(p.clients),
        "--workers",
        String(p.workers),
        "--steady",
        values.steady,
        ...(values.ramp ? ["--ramp", values.ramp] : []),
        "--out",
        relative(dirs.root, out), // relative, so the report's command line names no machine's folders
      ],
      { stdio: "inherit", timeout: 60 * 60_000, cwd: dirs.root },
    );
    if (!existsSync(outOf(p.clients))) throw new Error(`bench:million at ${p.clients} wrote no result (exit ${r.status ?? r.signal})`);
    const m = measuredOf(JSON.parse(readFileSync(outOf(p.clients), "utf8")) as MillionResult);
    // The bench slows its steady rate when one message takes longer than the gap to reach everyone: the CPU is
    // predicted for the rate it held (memory does not depend on it).
    const held = m.rate === 1 ? p : predictBench(read.costs, p.clients, p.workers, m.rate);
    const row: ValidationRow = { clients: p.clients, predicted: held, measured: m, costsFrom, report: `loadtest/results/validation/million-${p.clients}.md` };
    const i = rows.findIndex((x) => x.clients === p.clients);
    if (i >= 0) rows[i] = row;
    else rows.push(row);
    ok &&=
      m.errors === 0 &&
      [errorOf(held.gatewayRssMB, m.gatewayRssMB), errorOf(held.kernelMB, m.kernelMB), errorOf(held.steadyCpuPct, m.steadyCpuPct)].every(
        (x) => Math.abs(x) <= TOLERANCE,
      );
    writeFileSync(jsonFile, JSON.stringify(rows, null, 2) + "\n");
    writeFileSync(join(dirs.results, "capacity-validation.md"), validationTable(rows));
  }
  if (values["keep-as-million"]) {
    const largest = Math.max(...points);
    copyFileSync(outOf(largest), join(dirs.results, "million.json"));
    copyFileSync(outOf(largest).replace(/\.json$/, ".md"), join(dirs.results, "million.md"));
    console.log(`[validate] the ${f(largest)}-client run is also loadtest/results/million.md`);
  }
  console.log(validationTable(rows));
  return ok ? 0 : 1;
}
