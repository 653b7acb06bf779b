// bench:ab — two gateway builds side by side on one nats-server, in the same rounds: A is another git
// revision (built once into .bench/<sha>/), B is this checkout's dist/. Per-round ratios cancel the
// machine's drift, which on a shared VM is far larger than the difference between two builds.
//   --workload replay  (default) bench:replay's legs: raw ordered consumer, replay through A, through B
//   --workload publish autocannon HTTP publishes (32 connections, 5 s) to A, then B, alternating
// Usage: npm run bench -- ab --rev <git rev> [--workload replay|publish] [--rounds 16] [--warmup 1] [--messages 100000]
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { CLI, fmt, ROOT, startGatewayProc, startNats } from "./common.js";
import { fillStream, rawRead, socketReplay } from "./replay-legs.js";
import { FlagError, std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { median, runRounds } from "../kit/rounds.js";

/** Compiles `rev` with tsc into .bench/<sha>/ (kept for later runs), using this checkout's node_modules. */
function buildRevision(rev: string): string {
  const sha = execFileSync("git", ["-C", ROOT, "rev-parse", "--short=12", `${rev}^{commit}`], { encoding: "utf8" }).trim();
  const out = join(ROOT, ".bench", sha);
  const cli = join(out, "gateway/src/cli.js");
  if (existsSync(cli)) return cli;
  const src = join(ROOT, ".bench", `src-${sha}`);
  mkdirSync(join(ROOT, ".bench"), { recursive: true });
  execFileSync("git", ["-C", ROOT, "worktree", "add", "--force", "--detach", src, sha], { stdio: "ignore" });
  try {
    symlinkSync(join(ROOT, "node_modules"), join(src, "node_modules"));
    execFileSync(process.execPath, [join(ROOT, "node_modules/typescript/bin/tsc"), "-p", join(src, "tsconfig.json"), "--outDir", out], { stdio: "inherit" });
  } finally {
    execFileSync("git", ["-C", ROOT, "worktree", "remove", "--force", src], { stdio: "ignore" });
  }
  return cli;
}

type Leg = "raw" | "A" | "B";

/** autocannon (loadtest's own dependency) through the capacity script's wrapper: mean requests/s. */
async function httpPublishRate(port: number): Promise<number> {
  const mod = (await import(pathToFileURL(join(ROOT, "loadtest/capacity/http-publish.mjs")).href)) as {
    cannon(o: Record<string, unknown>): Promise<{ requests: { average: number } }>;
  };
  const r = await mod.cannon({
    url: `http://127.0.0.1:${port}/v1/publish/ab.pub`,
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ x: "y".repeat(92) }),
    connections: 32,
    duration: 5,
  });
  return r.requests.average;
}

const BENCH = defineBench("ab", {
  rev: { type: "string", help: "the git revision to compare this checkout against (required)" },
  workload: { type: "string", default: "replay", choices: ["replay", "publish"], help: "replay: raw reader, A and B; publish: HTTP publishes to A and B" },
  rounds: std("rounds", { default: 16, quick: 2 }),
  warmup: std("warmup", { default: 1 }),
  messages: std("messages", { default: 100_000, quick: 10_000 }),
  quick: std("quick"),
});

runBench(BENCH, async ({ flags: v }) => {
  if (!v.rev) throw new FlagError("--rev <git revision> is required (the build to compare this checkout against)");
  const { rounds, messages: count } = v;
  const cliA = buildRevision(v.rev);
  const nats = await startNats();
  const replay = v.workload === "replay";
  // As in bench:replay: a 1 MiB page cache, so that every round reads the stream (with the default 64 MiB,
  // rounds after the first were served from memory and compared the caches, not the read paths).
  const gwArgs = replay ? ["--replay-cache-bytes", "1MiB"] : [];
  const [a, b] = [await startGatewayProc(nats.url, 1, gwArgs, cliA), await startGatewayProc(nats.url, 1, gwArgs, CLI)];
  if (replay) await fillStream(nats.url, "ev.bench.replay", count, 100);
  // The publish workload has no raw leg: it compares the two gateways only.
  const run: Partial<Record<Leg, () => Promise<number>>> = replay
    ? {
        raw: () => rawRead(nats.url, "ev.bench.replay", count),
        A: () => socketReplay(a.port, "bench.replay", count),
        B: () => socketReplay(b.port, "bench.replay", count),
      }
    : { A: () => httpPublishRate(a.port), B: () => httpPublishRate(b.port) };
  const rotations: Leg[][] = [
    ["raw", "A", "B"],
    ["B", "A", "raw"],
    ["A", "raw", "B"],
    ["B", "raw", "A"],
    ["A", "B", "raw"],
    ["raw", "B", "A"],
  ];
  const orders = rotations.map((o) => o.filter((leg) => run[leg]));
  const measured = await runRounds({ rounds, warmup: v.warmup }, async (r) => {
    const round: Partial<Record<Leg, number>> = {};
    for (const leg of orders[r % orders.length]!) round[leg] = await run[leg]!();
    return round;
  });
  const got: Record<Leg, number[]> = { raw: [], A: [], B: [] };
  for (const round of measured) for (const leg of orders[0]!) got[leg].push(round[leg]!);
  const ratio = (x: Leg, y: Leg) => median(got[x].map((n, i) => n / got[y][i]!)).toFixed(3);
  console.log(`bench:ab ${v.workload} — ${rounds} rounds after ${v.warmup} warm-up; A = ${v.rev}, B = this checkout`);
  if (replay) {
    console.log(`median msgs/s (${fmt(count)} messages): raw ${fmt(median(got.raw))}, A ${fmt(median(got.A))}, B ${fmt(median(got.B))}`);
    console.log(`median of per-round ratios: A/raw ${ratio("A", "raw")}, B/raw ${ratio("B", "raw")}, B/A ${ratio("B", "A")}`);
  } else {
    console.log(
      `median publishes/s: A ${fmt(median(got.A))}, B ${fmt(median(got.B))}; per-round B/A ${got.B.map((n, i) => (n / got.A[i]!).toFixed(2)).join(" ")}`,
    );
    console.log(`median of per-round ratios: B/A ${ratio("B", "A")}`);
  }
  for (const p of [a.proc, b.proc, nats.proc]) p.kill("SIGTERM");
});
