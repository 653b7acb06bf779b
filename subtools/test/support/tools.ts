// Test helpers for the load tools: build them (only when sources are newer than dist/, under a lock so
// parallel test files do not compile at once) and run their real CLIs.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, rmSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { waitFor } from "#testkit/wait.js";

const ROOT = process.cwd();
export const SUB_CLI = resolve(ROOT, "subtools/sub-cluster.js");
export const PUB_CLI = resolve(ROOT, "pubtools/pub-cluster.js");
const LOCK = resolve(ROOT, "dist/.tools-build.lock");

function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newest(p));
    else if (e.name.endsWith(".ts") && !e.name.endsWith(".test.ts")) t = Math.max(t, statSync(p).mtimeMs);
  }
  return t;
}

function stale(): boolean {
  const marker = resolve(ROOT, "dist/subtools/src/sub-cluster.js");
  const markers = [marker, resolve(ROOT, "dist/pubtools/src/pub-cluster.js")];
  if (!markers.every(existsSync)) return true;
  const built = Math.min(...markers.map((m) => statSync(m).mtimeMs));
  return Math.max(newest(resolve(ROOT, "subtools/src")), newest(resolve(ROOT, "pubtools/src"))) > built;
}

/** Compiles subtools + pubtools into dist/ if their sources changed since the last build. */
export async function buildTools(): Promise<void> {
  if (!stale()) return;
  spawnSync("mkdir", ["-p", resolve(ROOT, "dist")]);
  const fd = await waitFor(
    () => {
      try {
        return openSync(LOCK, "wx");
      } catch {
        return stale() ? undefined : -1;
      }
    },
    { timeoutMs: 60_000, intervalMs: 100, what: "tools build lock" },
  );
  if (fd === -1) return; // another test file built them meanwhile
  try {
    if (!stale()) return;
    const r = spawnSync(process.execPath, [resolve(ROOT, "node_modules/typescript/bin/tsc"), "-p", resolve(ROOT, "subtools/tsconfig.tools.json")], {
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`tsc failed: ${r.stdout}${r.stderr}`);
  } finally {
    closeSync(fd);
    rmSync(LOCK, { force: true });
  }
}

export type Run = {
  child: ChildProcess;
  out: () => string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
};

/** Starts a CLI; stdout and stderr are collected together. */
export function run(cli: string, args: string[]): Run {
  const child = spawn(process.execPath, [cli, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  return { child, out: () => out, exited };
}

/** Runs a CLI to its end (bounded): exit code and output. */
export async function runToEnd(cli: string, args: string[], timeoutMs = 30_000): Promise<{ code: number | null; out: string }> {
  const r = run(cli, args);
  const t = setTimeout(() => r.child.kill("SIGKILL"), timeoutMs);
  const code = await r.exited;
  clearTimeout(t);
  return { code, out: r.out() };
}

/** Waits until a sub-cluster run prints that all its clients are connected. */
export function waitConnected(r: Run, clients: number): Promise<true> {
  return waitFor(
    () => {
      if (r.child.exitCode !== null) throw new Error(`sub-cluster exited ${r.child.exitCode}: ${r.out()}`);
      return r.out().includes(`clients ${clients}/${clients} `) || undefined;
    },
    { timeoutMs: 20_000, what: `${clients} clients connected` },
  );
}
