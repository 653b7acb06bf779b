// UWS_MODULE: the gateway loads the uWebSockets.js build it names (here the same build installed a second time
// under the alias "uws-alt", a devDependency), so a deployer can install another build without code changes;
// a build that does not load stops startup with its cause. The gateway says which Node and build it runs on.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { CLI, childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { buildNeedingNewerGlibc, GLIBC, pureJsBuild, UWS_BINARY } from "#testkit/uws-builds.js";

let nats: NatsServerHandle;
let gw: GatewayHandle | undefined;
beforeAll(async () => {
  nats = await startNatsServer();
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

/** The uWS native binaries mapped into a process (from /proc/<pid>/maps). */
const uwsBinaries = (pid: number): string[] => [
  ...new Set(
    readFileSync(`/proc/${pid}/maps`, "utf8")
      .split("\n")
      .map((l) => l.split(/\s+/)[5] ?? "")
      .filter((p) => /uws_[a-z0-9_]+\.node$/.test(p)),
  ),
];

describe("uws module — UWS_MODULE picks the uWebSockets.js build", () => {
  it("uws module — UWS_MODULE=uws-alt loads that package's binary in the primary and the workers, and serves WebSockets", async () => {
    gw = await startGateway({ natsUrl: nats.url, workers: 2, logLevel: "info", env: { UWS_MODULE: "uws-alt" } });
    const workers = await childPids(gw.process.pid!); // with --nats-url, the workers are the only children
    expect(workers).toHaveLength(2);
    for (const pid of [gw.process.pid!, ...workers]) {
      const bins = uwsBinaries(pid);
      expect(bins).toHaveLength(1);
      expect(bins[0]).toMatch(new RegExp(`/node_modules/uws-alt/${UWS_BINARY}$`));
    }
    const c = await TestClient.connect(gw.wsUrl);
    await c.sub("uws.alt");
    expect((await httpPublish(gw.url, "uws.alt", { via: "uws-alt" })).status).toBe(201);
    const [m] = await c.waitForMsgs(1);
    expect(m!.data).toEqual({ via: "uws-alt" });
    c.close();
  });

  it("uws module — the gateway logs at start which Node and uWS build it runs on, and /v1/stats reports them", async () => {
    const uws = `@based/uws@${(JSON.parse(readFileSync("node_modules/uws-alt/package.json", "utf8")) as { version: string }).version}`;
    const runtime = { node: process.version, abi: process.versions.modules, uws, ...(GLIBC ? { glibc: GLIBC } : {}) };
    const line = gw!.logs.find((l) => l.msg === `running on Node ${process.version}`);
    expect(line).toMatchObject(runtime);
    const stats = (await (await fetch(`${gw!.metricsUrl}/v1/stats`)).json()) as { runtime: unknown };
    expect(stats.runtime).toEqual(runtime);
  });

  it("uws module — a module that does not exist stops startup with a message naming UWS_MODULE", () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--workers", "1", "--nats-url", nats.url], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, UWS_MODULE: "no-such-uws-build" },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/UWS_MODULE \(--uws-module\).*no-such-uws-build/);
  });

  it.skipIf(!GLIBC)("uws module — a build needing a newer glibc stops startup with the linker's message, this Node and this glibc", () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--workers", "1", "--nats-url", nats.url], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, UWS_MODULE: buildNeedingNewerGlibc() },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/ERR_UWS_LOAD: uWebSockets\.js \(".*uws-build", UWS_MODULE\) failed to load on Node v\d+/);
    expect(r.stderr).toContain(`glibc ${GLIBC}`);
    expect(r.stderr).toMatch(new RegExp(`version \`GLIBC_2\\.99' not found \\(required by .*${UWS_BINARY}\\)`));
  });

  it("uws module — a build without a native binary (a pure-JS fallback) is refused", () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--workers", "1", "--nats-url", nats.url], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, UWS_MODULE: pureJsBuild() },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/ERR_UWS_FALLBACK: uWebSockets\.js \(".*uws-js"\) native binary did not load/);
  });
});
