// scripts/nats-cluster.sh as a person runs it: start (returns once a meta leader exists), status, stop.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const SCRIPT = "scripts/nats-cluster.sh";

function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const s = createServer();
    s.once("error", () => res(false));
    s.listen(port, "127.0.0.1", () => s.close(() => res(true)));
  });
}

/** A base port P whose nine derived ports (P+i, P+2000+i, P+4000+i) are all free right now; bounded tries. */
async function freeBasePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 6_000);
    const ports = [0, 1, 2].flatMap((i) => [base + i, base + 2000 + i, base + 4000 + i]);
    const free = await Promise.all(ports.map(portFree));
    if (free.every(Boolean)) return base;
  }
  throw new Error("no free base port found in 50 tries");
}

describe("scripts/nats-cluster.sh", () => {
  const dir = mkdtempSync(join(tmpdir(), "fgw-cluster-sh-"));
  afterAll(async () => {
    await run("bash", [SCRIPT, "stop", "--dir", dir], { timeout: 30_000 }).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it("nats-cluster.sh — start returns with a meta leader, status lists 3 healthy nodes, stop stops them", async () => {
    const base = await freeBasePort();
    const started = await run("bash", [SCRIPT, "start", "--dir", dir, "--base-port", String(base), "--sync", "always"], { timeout: 45_000 });
    const leader = /meta leader (n[123])/.exec(started.stdout)?.[1];
    expect(leader, started.stdout + started.stderr).toBeTruthy();
    expect(started.stdout).toContain(`nats://127.0.0.1:${base}`);
    expect(started.stdout).toContain("sync_interval always");

    const jsz = (await (await fetch(`http://127.0.0.1:${base + 4000}/jsz`)).json()) as {
      config?: { sync_always?: boolean };
      meta_cluster?: { cluster_size?: number };
    };
    expect(jsz.meta_cluster?.cluster_size).toBe(3);
    expect(jsz.config?.sync_always).toBe(true);

    const status = await run("bash", [SCRIPT, "status", "--dir", dir], { timeout: 15_000 });
    const lines = status.stdout.trim().split("\n");
    expect(lines).toHaveLength(3);
    for (const l of lines) expect(l).toMatch(new RegExp(`^n[123]\\tpid \\d+\\thealthy\\tmonitor :\\d+\\tmeta leader ${leader}$`));

    await run("bash", [SCRIPT, "stop", "--dir", dir], { timeout: 30_000 });
    const after = await run("bash", [SCRIPT, "status", "--dir", dir], { timeout: 15_000 }).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
    );
    expect(after.code).toBe(1);
    expect(after.out.trim().split("\n")).toEqual(["n1\tstopped", "n2\tstopped", "n3\tstopped"]);
  });
});
