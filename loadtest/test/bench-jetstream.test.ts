// bench:jetstream: a --quick run end to end on the single node and the 3-node cluster (every row must carry a
// number, the gateway leg's included; the netem case may be skipped, with its reason, where this machine does
// not permit it), and the nats bench output parser on v0.5.1's two output shapes.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseBench } from "../bench/jetstream/natscli.js";
import { rowHasNumbers, type Row } from "../bench/jetstream/rows.js";
import { MATRIX } from "../bench/jetstream/matrix.js";

const ROOT = process.cwd();
const BENCH = resolve(ROOT, "dist/loadtest/bench/jetstream/main.js");

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((done) => {
    const p = spawn(process.execPath, [BENCH, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    p.stdout.on("data", (d: Buffer) => (out += d.toString()));
    p.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const t = setTimeout(() => p.kill("SIGKILL"), timeoutMs);
    p.on("exit", (code) => {
      clearTimeout(t);
      done({ code, out, err });
    });
  });
}

describe("bench:jetstream — a --quick run on the single node and the 3-node cluster", () => {
  const dir = mkdtempSync(join(tmpdir(), "fgw-bench-js-"));
  let result: { code: number | null; out: string; err: string };
  let rows: Row[] = [];

  beforeAll(async () => {
    // natscli v0.5.1 into .tools/bin; a no-op when npm test's set-up already built it.
    execFileSync("bash", [resolve(ROOT, "scripts/setup-bench-tools.sh")], { stdio: "inherit", timeout: 600_000 });
    // Exit 1 with a report means failed rows (the tests below list them); without one, the run itself broke.
    const report = join(dir, "jetstream.json");
    result = await run(["--quick", "--out", dir], 240_000);
    if (!existsSync(report)) {
      // Once, in a fresh-clone CI run, the quick run ended without a report 13 s in, its output unseen (six runs
      // since, three of them under the whole suite, did not repeat it). It is run once more, and what the
      // broken run printed is shown in the test output.
      console.warn(
        `bench:jetstream --quick ended with ${result.code} and no report; running it once more. Its output:\n${result.out.slice(-4000)}\n${result.err.slice(-4000)}`,
      );
      result = await run(["--quick", "--out", dir], 240_000);
    }
    if ((result.code === 0 || result.code === 1) && existsSync(report)) rows = (JSON.parse(readFileSync(report, "utf8")) as { rows: Row[] }).rows;
  }, 900_000);

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("bench:jetstream — exits 0 and every measured row carries a number", () => {
    expect(result.code, result.out.slice(-3000) + result.err.slice(-2000)).toBe(0);
    const bad = rows.filter((r) => r.status !== "skipped" && !rowHasNumbers(r));
    expect(bad.map((r) => `${r.workload} ${r.target} ${r.path}: ${r.status} ${r.note ?? ""}`)).toEqual([]);
  });

  it("bench:jetstream — seeds 000-002 and the publish paths ran on both targets, with nats bench and nats.js", () => {
    for (const target of ["single", "cluster"] as const) {
      const here = rows.filter((r) => r.target === target && r.status === "ok" && r.seed !== "enc");
      const ids = new Set(here.map((r) => r.workload));
      for (const w of [
        "000.one-10k-r3-sync-3",
        "000.app-10k-r3-sync-6",
        "000.one-1k-r3-sync-6-mem",
        "001.push-group-5",
        "002.dedup-r1",
        "002.scale-64",
        "002.kv-put",
        "002.kv-watch",
        "paths.sequential",
      ]) {
        expect(ids, `${w} on ${target}`).toContain(w);
      }
      expect(new Set(here.map((r) => r.path))).toEqual(new Set(["nats bench", "nats.js", "nats CLI", "gateway HTTP", "gateway WS"]));
      // The layout pairs through the gateway, one stream and a namespace stream per app.
      expect(
        here
          .filter((r) => r.path === "gateway WS")
          .map((r) => r.workload)
          .sort(),
      ).toEqual(["000.app-10k-r3-sync-3", "000.app-10k-r3-sync-6", "000.one-10k-r3-sync-3", "000.one-10k-r3-sync-6"]);
    }
    // Every matrix row on the cluster (the single node skips those that repeat another once R3 becomes R1).
    const cluster = new Set(rows.filter((r) => r.target === "cluster" && r.seed === "000").map((r) => r.workload));
    expect([...cluster].sort()).toEqual(MATRIX.map((m) => m.workload).sort());
    expect(rows.some((r) => r.workload === "002.dedup-r3" && r.target === "cluster" && r.status === "ok")).toBe(true);
  });

  it("bench:jetstream — seed 003 measured every delay and mode, and netem is either measured or skipped with its reason", () => {
    const measured = rows.filter((r) => r.seed === "003" && r.status === "ok");
    for (const mode of ["sequential", "pipelined"]) {
      for (const d of [0, 1, 10])
        expect(
          measured
            .filter((r) => r.workload === `003.${mode}-${d}`)
            .map((r) => r.path)
            .sort(),
        ).toEqual(["nats bench", "nats.js"]);
    }
    const skipped = rows.filter((r) => r.status === "skipped");
    for (const r of skipped) {
      expect(r.workload).toMatch(/^003\.netem-/);
      expect(r.note ?? "").not.toBe("");
    }
    if (skipped.length) expect(result.out).toMatch(/SKIPPED the netem case: .+/);
    else expect(measured.every((r) => r.config.startsWith("netem:"))).toBe(true);
  });

  it("bench:jetstream — encryption at rest: sync and async publishes and a gateway replay, plain, chachapoly and aes, with ratios to plain", () => {
    for (const kind of ["pub-sync", "pub-async", "replay"]) {
      for (const cipher of ["plain", "chachapoly", "aes"]) {
        expect(
          rows.some((r) => r.workload === `enc.${kind}.${cipher}` && r.status === "ok"),
          `enc.${kind}.${cipher}`,
        ).toBe(true);
      }
    }
    const md = readFileSync(join(dir, "jetstream.md"), "utf8");
    expect(md).toMatch(/## Encryption at rest: encrypted \/ plain file store/);
    expect(md).toMatch(/\| replay through the gateway \(cold store\) \|( [\d,]+ \|){3} \d+\.\d\d/);
  });

  it("bench:jetstream — writes the report with the users' figures beside ours", () => {
    const md = readFileSync(join(dir, "jetstream.md"), "utf8");
    expect(md).toMatch(/## Ratios between configurations/);
    expect(md).toMatch(/avg pub 177, sub ~340 msgs\/s/);
    expect(md).toMatch(/## The users' nats bench flags in natscli v0\.5\.1/);
    expect(md).toMatch(/\| 3-node cluster \| 1 \(users 3\) \| [\d,]+ \| [\d,]+ \| \d+\.\d\d \| 1\.19 \|/);
  });
});

describe("bench:jetstream — nats bench output", () => {
  it("natscli — reads per-client rates, the aggregate and latencies from a multi-client run", () => {
    const out = `
  [1] 5,579 msgs/sec ~ 5.4 MiB/sec ~ min: 36.24us ~ avg: 178.82us ~ max: 2,491.87us ~ P50: 162.81us ~ P90: 284.75us ~ P99: 483.21us ~ P99.9: 2,491.87us (1,000 msgs)
  [2] 5,559 msgs/sec ~ 5.4 MiB/sec ~ min: 37.34us ~ avg: 179.56us ~ max: 2,489.28us ~ P50: 161.88us ~ P90: 284.91us ~ P99: 505.23us ~ P99.9: 2,489.28us (1,000 msgs)

 NATS JetStream synchronous publisher aggregated stats: 11,119 msgs/sec ~ 11 MiB/sec
 message rates min 5,559 | avg 5,569 | max 5,579 | stddev 10 msgs
 latencies per operation min 36.24us | avg 179.19us | max 2,491.87us | stddev 215.87us | P50 162.44us | P90 284.91us | P99 504.11us | P99.9: 2,489.28us
`;
    const b = parseBench(out);
    expect(b.aggregate).toBe(11119);
    expect(b.clients.map((c) => [c.msgsPerSec, c.msgs])).toEqual([
      [5579, 1000],
      [5559, 1000],
    ]);
    expect(b.latencyUs).toEqual({ min: 36.24, avg: 179.19, max: 2491.87, p50: 162.44, p99: 504.11 });
    expect(b.lines).toHaveLength(5);
  });

  it("natscli — reads a single-client run, which prints one stats line and no per-client lines", () => {
    const b = parseBench(
      "\nNATS JetStream KV putter stats: 1,990 msgs/sec ~ 249 KiB/sec ~ min: 201.23us ~ avg: 499.49us ~ max: 1,630.98us ~ P50: 472.36us ~ P90: 675.20us ~ P99: 946.22us ~ P99.9: 1,630.98us\n",
    );
    expect(b.aggregate).toBe(1990);
    expect(b.clients).toHaveLength(1);
    expect(b.latencyUs?.avg).toBe(499.49);
    expect(b.latencyUs?.p99).toBe(946.22);
  });

  it("natscli — output without a figure is an error naming what it got", () => {
    expect(() => parseBench("nats: error: context deadline exceeded")).toThrow(/no aggregated figure.*context deadline exceeded/);
  });
});
