// `npm run bench -- …`: the one entry (dist/loadtest/kit/cli.js) as a user runs it, and the kit's command line
// as every bench gets it. No servers start: each case ends before the bench measures anything.
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { BENCHES } from "../kit/registry.js";

const CLI = resolve(process.cwd(), "dist/loadtest/kit/cli.js");
const run = (...args: string[]) => spawnSync(process.execPath, [CLI, ...args], { encoding: "utf8", timeout: 30_000 });

describe("npm run bench — the one entry", () => {
  it("bench cli — --list names every bench and exits 0", () => {
    const r = run("--list");
    expect(r.status).toBe(0);
    for (const name of Object.keys(BENCHES)) expect(r.stdout).toMatch(new RegExp(`^${name} `, "m"));
  });

  it("bench cli — an unknown bench exits 2 and points at --list", () => {
    const r = run("nope");
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/no bench named "nope"; npm run bench -- --list names them/);
  });

  it("bench cli — every kit bench prints its flags for --help, the standard ones included", () => {
    for (const [name, b] of Object.entries(BENCHES)) {
      if (!b.kit) continue;
      const r = run(name, "--help");
      expect(r.status, `${name}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toContain(`npm run bench -- ${name} [flags]\n${b.summary}\n`);
      expect(r.stdout).toMatch(/--help +this text/);
      expect(r.stdout, name).not.toMatch(/--role/);
    }
  });

  it("bench cli — a bad flag is refused before anything starts: exit 2, the message names it", () => {
    const unknown = run("sse", "--bogus");
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/^sse: Unknown option '--bogus'.*\(--help lists the flags\)/);
    const range = run("storm", "--sockets", "0");
    expect(range.status).toBe(2);
    expect(range.stderr).toMatch(/storm: --sockets must be at least 1, not 0/);
    const broker = run("compare", "--brokers", "kafka");
    expect(broker.status).toBe(2);
    expect(broker.stderr).toMatch(/^compare: --brokers must be one of jetstream, redis, not "kafka"/);
    const missing = run("ab");
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/ab: --rev <git revision> is required/);
  });
});
