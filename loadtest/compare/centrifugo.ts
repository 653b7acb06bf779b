// npm run bench -- centrifugo (alias npm run compare:centrifugo) — the Centrifuge SDK scenario set
// (gateway/conformance/centrifuge/scenarios.json) with each SDK's runner unchanged, against this gateway's
// Centrifugo door and against a real Centrifugo v6 server (.tools/bin/centrifugo, memory engine), both at once,
// each with its own TCP proxy for the faults. Writes loadtest/results/centrifugo-side-by-side.md: one row per
// scenario and SDK with each server's outcome and the difference. It stops by itself within a few minutes.
import { existsSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { startHarness, type GatewayHarness } from "../../gateway/conformance/harness.js";
import { ClientPool, runScenario, type Scenario } from "../../gateway/conformance/runner.js";
import { buildRunners, NODE_RUNNERS, RUNNERS, type Runner } from "../../gateway/conformance/centrifuge/runners.js";
import { CENTRIFUGO_FAULTS, startCentrifugoHarness } from "../../gateway/conformance/centrifuge/centrifugo-harness.js";
import { SCENARIOS } from "../../gateway/conformance/centrifuge/scenarios.js";
import { FlagError, std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { commandLine, reportPath, ROOT, writeReport } from "../kit/results.js";
import { renderSideBySide, type Outcome } from "./centrifugo-report.js";
import { EXPLAINED } from "./centrifugo-differences.js";

const log = (s: string): void => console.log(`[compare:centrifugo] ${s}`);
const ALL_RUNNERS = [...RUNNERS, ...NODE_RUNNERS];
const SDKS = { go: "go", python: "python", node: "node", java: "java" } as const;

const BENCH = defineBench("centrifugo", {
  sdks: { type: "list", default: ["go", "python", "node"], choices: Object.keys(SDKS), help: "the SDK runners to play the scenarios with" },
  formats: { type: "list", default: ["json"], choices: ["json", "protobuf"], help: "the formats (Java speaks only Protobuf)" },
  scenarios: { type: "list", help: "only these scenarios (default: all of scenarios.json)" },
  binary: { type: "string", default: ".tools/bin/centrifugo", help: "the Centrifugo v6 server binary (scripts/setup-centrifugo.sh installs it)" },
  out: std("out"),
  "no-write": std("no-write"),
});

/** Every scenario with `runner` against one server, in order; a failed scenario's clients are discarded. */
async function playAll(
  server: Outcome["server"],
  harness: GatewayHarness,
  runner: Runner,
  command: ReturnType<Awaited<ReturnType<typeof buildRunners>>["command"]>,
  scenarios: readonly Scenario[],
): Promise<Outcome[]> {
  const pool = new ClientPool(command);
  const out: Outcome[] = [];
  try {
    for (const s of scenarios) {
      const t0 = Date.now();
      try {
        await runScenario(s, harness, pool);
        out.push({ scenario: s.name, sdk: runner.label, server, ok: true, ms: Date.now() - t0 });
      } catch (e) {
        out.push({ scenario: s.name, sdk: runner.label, server, ok: false, ms: Date.now() - t0, ...failure(e) });
      } finally {
        await harness.reset();
      }
      const last = out[out.length - 1]!;
      log(`${server.padEnd(10)} ${runner.label} — ${s.name}: ${last.ok ? "pass" : `FAIL ${last.why}`}`);
    }
  } finally {
    await pool.close();
  }
  return out;
}

/** A failed scenario's account: the runner's first line without the step's JSON, and the client's subscription events. */
function failure(e: unknown): { why: string; seen: string[] } {
  const text = e instanceof Error ? e.message : String(e);
  const [first = "", ...rest] = text.split("\n");
  const why = first.replace(/ \{.*\}: /, ": ").slice(0, 240);
  const seen = rest
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((ev) => ["subscribed", "unsubscribed", "disconnected"].includes(ev.event as string) || (ev.event === "connecting" && (ev.code as number) > 0))
    .slice(0, 4)
    .map(({ sub: _s, client: _c, epoch: _e, ...ev }) => JSON.stringify(ev));
  return { why, seen };
}

runBench(BENCH, async ({ flags: v, argv }) => {
  const binary = join(ROOT, v.binary);
  if (!existsSync(binary)) throw new FlagError(`no Centrifugo binary at ${v.binary}: bash scripts/setup-centrifugo.sh installs it`);
  const runners = ALL_RUNNERS.filter((r) => v.sdks.includes(r.sdk) && v.formats.includes(r.format));
  if (runners.length === 0) throw new FlagError(`no runner speaks ${v.formats.join(", ")} among ${v.sdks.join(", ")}`);
  const scenarios = v.scenarios ? SCENARIOS.filter((s) => v.scenarios!.includes(s.name)) : SCENARIOS;
  const t0 = Date.now();
  log(`building ${runners.length} runners, starting the gateway and Centrifugo`);
  const [built, gateway, centrifugo] = await Promise.all([
    buildRunners(runners),
    // As the npm test suite runs it (suite.ts): the SDKs refresh a token at most a second before it expires.
    startHarness({ wsPath: "/connection/websocket", env: { JWT_CLOCK_TOLERANCE: "1s" } }),
    startCentrifugoHarness(binary),
  ]);
  const outcomes: Outcome[] = [];
  try {
    for (const r of runners) {
      const both = await Promise.all([
        playAll("gateway", gateway, r, built.command(r), scenarios),
        playAll("centrifugo", centrifugo, r, built.command(r), scenarios),
      ]);
      outcomes.push(...both.flat());
    }
  } finally {
    await Promise.all([gateway.close(), centrifugo.close(), built.cleanup()]);
  }
  const report = renderSideBySide(outcomes, {
    command: commandLine("centrifugo", argv),
    date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
    gateway: "this checkout (dist/), 2 workers, nats-server with JetStream, the conformance suite's settings and JWT_CLOCK_TOLERANCE=1s",
    centrifugo: `${centrifugo.version}, memory engine, recovery_max_publication_limit 300 (its default), history_size 10000`,
    load: loadavg()
      .map((l) => l.toFixed(2))
      .join(", "),
    seconds: (Date.now() - t0) / 1000,
    faults: CENTRIFUGO_FAULTS,
    explained: EXPLAINED,
  });
  process.stdout.write(report);
  const path = reportPath(v, "centrifugo-side-by-side.md");
  if (path) writeReport(path, report);
});
