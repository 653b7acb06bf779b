// UWS_MODULE: the gateway loads the uWebSockets.js build it names (here the same build installed a second time
// under the alias "uws-alt", a devDependency), so a deployer can install another build without code changes.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "./support/nats-server.js";
import { CLI, childPids, startGateway, type GatewayHandle } from "./support/gateway.js";
import { httpPublish, TestClient } from "./support/ws-client.js";

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
      expect(bins[0]).toMatch(/\/node_modules\/uws-alt\/binaries\//);
    }
    const c = await TestClient.connect(gw.wsUrl);
    await c.sub("uws.alt");
    expect((await httpPublish(gw.url, "uws.alt", { via: "uws-alt" })).status).toBe(201);
    const [m] = await c.waitForMsgs(1);
    expect(m!.data).toEqual({ via: "uws-alt" });
    c.close();
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

  it("uws module — the pure-JS fallback of the named build is refused too", () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--workers", "1", "--nats-url", nats.url], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, UWS_MODULE: "uws-alt", UWS_USE_FALLBACK: "1" },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/ERR_UWS_FALLBACK: uWebSockets\.js \("uws-alt"\)/);
  });
});
