import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { main, parseArgs, splitCommand, UsageError, type CliDeps } from "../cli.js";

// `npm run conformance` without servers: the command line, and the runner driving real adapter processes
// (echo-adapter.mjs) against a harness that stands in for the gateway, down to the summary line and exit code.
const root = mkdtempSync(join(tmpdir(), "conformance-cli-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const adapterDir = join(root, "an adapter dir");
mkdirSync(adapterDir);
copyFileSync(fileURLToPath(new URL("./echo-adapter.mjs", import.meta.url)), join(adapterDir, "echo.mjs"));
const scenarios = join(root, "gateway/conformance/scenarios");
mkdirSync(scenarios, { recursive: true });
const scenario = (name: string, steps: unknown[]) => writeFileSync(join(scenarios, `${name}.json`), JSON.stringify({ name, description: name, steps }));
// The adapter gets its arguments as quoted, and runs in the root.
scenario("connects", [{ do: "connect" }, { expect: "event", type: "connected", match: { argv: ["-v", "it's"], cwd: realpathSync(root) } }]);
scenario("refused", [{ do: "connect" }, { do: "publish", channel: "$ch", n: 1 }]);
scenario("noisy", [{ do: "connect" }, { do: "subscribe", sub: "s", channel: "$ch" }]);

async function run(argv: string[]): Promise<{ code: number; lines: string[]; closed: boolean }> {
  const lines: string[] = [];
  let closed = false;
  const deps: CliDeps = {
    root,
    print: (l) => lines.push(...l.split("\n")),
    start: async () => ({
      wsUrl: "ws://127.0.0.1:9/ws",
      token: async () => "token",
      publish: async () => 1,
      fault: async () => undefined,
      reset: async () => undefined,
      close: async () => void (closed = true),
    }),
  };
  return { code: await main(argv, deps), lines, closed };
}

const echo = `"${process.execPath}" "${join(adapterDir, "echo.mjs")}" -v "it's"`;

describe("conformance CLI — the command line", () => {
  it("conformance CLI — --client is split as a shell splits it: quotes, escapes, blanks", () => {
    expect(splitCommand(`python3 'my adapter.py' -v`)).toEqual(["python3", "my adapter.py", "-v"]);
    expect(splitCommand(` a  "b \\"c\\" $d" e\\ f '' "x"'y'z `)).toEqual(["a", 'b "c" $d', "e f", "", "xyz"]);
    expect(splitCommand(`java -jar "C:\\a b\\c.jar"`)).toEqual(["java", "-jar", "C:\\a b\\c.jar"]);
    expect(() => splitCommand(`node 'open`)).toThrow(UsageError);
    expect(() => splitCommand(`node "open`)).toThrow(UsageError);
  });

  it("conformance CLI — named clients, a command line, --scenario; unknown or missing arguments are usage errors", () => {
    const ts = parseArgs(["--client", "typescript"]);
    expect(ts.client.command).toBe(process.execPath);
    expect(ts.client.args[0]).toMatch(/gateway\/conformance\/adapters\/typescript\.mjs$/);
    expect(parseArgs(["--client=java -jar 'x y.jar'", "--scenario", "a", "--scenario=b"], root)).toEqual({
      label: "java -jar 'x y.jar'",
      client: { command: "java", args: ["-jar", "x y.jar"], cwd: root },
      scenarios: ["a", "b"],
    });
    expect(() => parseArgs(["--client", "kotlin"], root)).toThrow(/client-kotlin\/conformance-adapter\.sh does not exist/);
    expect(() => parseArgs([])).toThrow(/--client is required/);
    expect(() => parseArgs(["--client"])).toThrow(/needs a value/);
    expect(() => parseArgs(["--client", "typescript", "--fast"])).toThrow(/unknown argument --fast/);
  });
});

describe("conformance CLI — running scenarios", () => {
  it("conformance CLI — a line per scenario, the last one `N passed, N failed`, exit 1 when any failed", async () => {
    const { code, lines, closed } = await run(["--client", echo]);
    expect(code).toBe(1);
    expect(closed).toBe(true);
    expect(lines.at(-1)).toBe("1 passed, 2 failed");
    // The echo adapter does not announce `reset`: a fresh process per scenario.
    expect(lines.at(-2)).toBe("adapter processes started: 3");
    expect(lines.filter((l) => /^(ok {3}|FAIL )/.test(l)).map((l) => l.split(/[ :]+/).slice(0, 2).join(" "))).toEqual([
      "ok connects",
      "FAIL noisy",
      "FAIL refused",
    ]);
    expect(lines.find((l) => l.startsWith("FAIL noisy"))).toContain("not protocol lines");
    expect(lines.find((l) => l.startsWith("FAIL refused"))).toContain('"code":"forbidden"');
  });

  it("conformance CLI — exit 0 when every scenario chosen passed; 2 with the usage on bad arguments", async () => {
    const ok = await run(["--client", echo, "--scenario", "connects"]);
    expect([ok.code, ok.lines.at(-1)]).toEqual([0, "1 passed, 0 failed"]);
    const bad = await run(["--client", echo, "--scenario", "nope"]);
    expect(bad.code).toBe(2);
    expect(bad.lines.join("\n")).toMatch(/no scenario nope[\s\S]*usage: npm run conformance/);
    expect(bad.closed).toBe(false);
  });
});
