// WORKER_MAX_CONNECTIONS: a worker at its cap closes its listeners, so new connections go to the workers that
// still listen (all of them on one port, SO_REUSEPORT); below its low-water mark it listens again. Which worker
// holds a connection is read from /proc, not from the gateway's own counts.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { metric } from "#testkit/metrics.js";
import { clientPortsHeldBy, connectionsPerPid } from "#testkit/proc-sockets.js";
import { waitFor } from "#testkit/wait.js";

const CAP = 50;
const WORKERS = 3;
let nats: NatsServerHandle;
let gw: GatewayHandle;
const sockets: WebSocket[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: WORKERS,
    logLevel: "info",
    // The admin listener answers /metrics while no worker listens on the public port.
    args: ["--admin-port", "0", "--max-connections-per-ip=-1", "--connect-rate-per-ip=-1"],
    env: { WORKER_MAX_CONNECTIONS: String(CAP) },
  });
}, 60_000);

afterAll(async () => {
  for (const s of sockets) s.terminate();
  await gw?.stop();
  await nats?.stop();
});

/** Opens a WebSocket; resolves with it open, or rejects with the error it failed with. */
function open(): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(gw.wsUrl);
    ws.once("open", () => resolve(ws));
    ws.once("error", reject);
  });
}

/** Open connections per worker pid, from /proc. */
async function perWorker(): Promise<Map<number, number>> {
  return connectionsPerPid(await childPids(gw.process.pid!), gw.port);
}

const workersFull = (): Promise<number> => metric(gw.metricsUrl, "fanout_workers_full");

describe("worker cap — WORKER_MAX_CONNECTIONS", () => {
  it("worker cap — 150 sockets on 3 workers capped at 50: all open, none above 50, and the 151st is refused while none listens", async () => {
    // One at a time: each opens after the previous one's worker has counted it (and closed at its cap).
    for (let i = 0; i < WORKERS * CAP; i++) sockets.push(await open());
    const held = await perWorker();
    expect([...held.values()].sort()).toEqual([CAP, CAP, CAP]);
    await waitFor(async () => (await workersFull()) === WORKERS, { what: "every worker full" });
    // No worker listens: the kernel refuses the connection at once (no queue it could wait in unseen).
    await expect(open()).rejects.toMatchObject({ code: "ECONNREFUSED" });
  });

  it("worker cap — a worker whose sockets close to its low-water mark (45) listens again and takes the new ones", async () => {
    const before = await perWorker();
    const [pid] = [...before.keys()];
    // Close 5 of that worker's sockets: 45 is its low-water mark.
    const theirs = socketsOf(pid!);
    for (const s of theirs.slice(0, 5)) s.close();
    await waitFor(async () => (await perWorker()).get(pid!) === CAP - 5, { what: "5 sockets closed" });
    await waitFor(async () => (await workersFull()) === WORKERS - 1, { what: "one worker listening again" });
    for (let i = 0; i < 5; i++) sockets.push(await open());
    const after = await perWorker();
    expect(after.get(pid!)).toBe(CAP);
    expect([...after.values()].sort()).toEqual([CAP, CAP, CAP]);
    expect(await metric(gw.metricsUrl, "fanout_worker_cap_reached_total")).toBe(WORKERS + 1);
    expect(gw.logs.filter((l) => l.msg === "listening again")).toHaveLength(1);
  });
});

/** The open test sockets whose server side `pid` holds. */
function socketsOf(pid: number): WebSocket[] {
  const ports = new Set(clientPortsHeldBy(pid, gw.port));
  return sockets.filter((s) => s.readyState === WebSocket.OPEN && ports.has((s as unknown as { _socket: { localPort: number } })._socket.localPort));
}
