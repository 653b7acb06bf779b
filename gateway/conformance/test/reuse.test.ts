import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ClientPool, runScenario, type Harness, type Scenario } from "../runner.js";

// The runner keeps an adapter process across scenarios only when the adapter announced `reset` and answers it,
// and only after a pass: real processes (reuse-adapter.mjs) against a harness that stands in for the gateway,
// counted by the pids they log when they start.
const dir = mkdtempSync(join(tmpdir(), "conformance-reuse-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const adapter = fileURLToPath(new URL("./reuse-adapter.mjs", import.meta.url));
const harness: Harness = { wsUrl: "ws://127.0.0.1:9/ws", token: async () => "token", publish: async () => 1, fault: async () => undefined };

const scenario = (name: string, steps: unknown[]): Scenario => ({ name, description: name, steps: steps as Scenario["steps"] });
const SUITE = [
  scenario("marks", [{ do: "connect" }, { do: "mark" }, { expect: "event", type: "mark" }]),
  // Fails when the events of the scenario before (its `mark`, a late one) leak into this one.
  scenario("clean", [{ do: "connect" }, { expect: "no_event", type: "mark" }, { expect: "event", type: "connected" }]),
  scenario("fails", [{ do: "connect" }, { do: "publish", channel: "$ch", n: 1 }]),
  scenario("two-clients", [{ do: "connect" }, { do: "connect", client: "b" }, { expect: "event", type: "connected", client: "b" }]),
  scenario("after", [{ do: "connect" }, { do: "mark" }, { expect: "no_event", type: "connected", match: { late: true } }]),
];

/** Plays SUITE with one pool; the scenarios' outcomes and the adapter processes started. */
async function play(flags: string[], resetTimeoutMs?: number, suite = SUITE): Promise<{ outcomes: string[]; started: number; counted: number }> {
  const log = join(dir, `${flags.join("")}-${Date.now()}.log`);
  const pool = new ClientPool({ command: process.execPath, args: [adapter, "--log", log, ...flags] }, { resetTimeoutMs });
  const outcomes: string[] = [];
  try {
    for (const s of suite)
      outcomes.push(
        await runScenario(s, harness, pool).then(
          () => `ok ${s.name}`,
          () => `FAIL ${s.name}`,
        ),
      );
  } finally {
    await pool.close();
  }
  return { outcomes, started: pool.started, counted: readFileSync(log, "utf8").trim().split("\n").length };
}

const OUTCOMES = ["ok marks", "ok clean", "FAIL fails", "ok two-clients", "ok after"];

describe("conformance runner — adapter processes across scenarios", () => {
  it("conformance runner — an adapter that answers reset plays every passing scenario in the processes it has; a failure discards them", async () => {
    // marks, clean and fails in process 1 (discarded: fails failed), two-clients in 2 and 3, after in one of those.
    expect(await play(["--reset"])).toEqual({ outcomes: OUTCOMES, started: 3, counted: 3 });
  });

  it("conformance runner — an adapter that does not announce reset gets a fresh process for every client of every scenario", async () => {
    expect(await play([])).toEqual({ outcomes: OUTCOMES, started: 6, counted: 6 });
  });

  it("conformance runner — a line written after the reset answer discards the process: nothing of a scenario reaches the next", async () => {
    expect(await play(["--reset", "--stale"])).toEqual({ outcomes: OUTCOMES, started: 6, counted: 6 });
  });

  it("conformance runner — a reset not answered in time discards the process", async () => {
    expect(await play(["--reset", "--hang"], 300)).toEqual({ outcomes: OUTCOMES, started: 6, counted: 6 });
  });

  it("conformance runner — a client the scenario closed (`close` step) is never kept, even when it answers reset before it exits", async () => {
    // Kotlin's adapter answered the reset while its JVM was still shutting down, and the next scenario but one
    // met a process that exited under it (publish-bytes, after presence closed client b).
    const suite = [
      scenario("closes", [{ do: "connect" }, { do: "connect", client: "b" }, { do: "close", client: "b" }]),
      scenario("next", [{ do: "connect" }, { do: "connect", client: "b" }, { expect: "event", type: "connected", client: "b" }]),
    ];
    // closes: processes 1 (a) and 2 (b, closed: discarded); next: 1 again and a new 3.
    expect(await play(["--reset", "--slow-exit"], undefined, suite)).toEqual({ outcomes: ["ok closes", "ok next"], started: 3, counted: 3 });
  });
});
