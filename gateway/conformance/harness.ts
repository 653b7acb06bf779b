// The conformance suite's world: a real nats-server and gateway (two workers, JWT auth, an API key for HTTP
// publishes), a TCP proxy in front of it that can cut every connection or refuse new ones, and the faults
// the scenarios name. Built from the gateway's test kit (gateway/test/support).
import { createConnection, createServer, type Socket } from "node:net";
import { jetstreamManager } from "@nats-io/jetstream";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { startNatsServer, type NatsServerHandle } from "../test/support/nats-server.js";
import { childPids, startGateway, type GatewayHandle } from "../test/support/gateway.js";
import { httpPublish } from "../test/support/ws-client.js";
import { waitFor } from "../test/support/wait.js";
import { AUDIENCE, ISSUER, SECRET, sign } from "../test/auth/support.js";
import type { Harness, Step, TokenSpec } from "./runner.js";

const API_KEY = "conformance-api-key-0123456789";

export type GatewayHarness = Harness & { close(): Promise<void> };

export async function startHarness(): Promise<GatewayHarness> {
  const nats: NatsServerHandle = await startNatsServer();
  const gw: GatewayHandle = await startGateway({
    natsUrl: nats.url,
    workers: 2,
    logLevel: "info",
    args: ["--restart-backoff", "100ms"],
    env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, JWT_CLOCK_TOLERANCE: "0s", API_KEYS: API_KEY },
  });
  const nc: NatsConnection = await natsConnect({ servers: nats.url });
  const proxy = await startProxy(gw.port);
  return {
    wsUrl: `ws://127.0.0.1:${proxy.port}/ws`,
    token: (spec: TokenSpec) =>
      sign(
        { channels: { sub: [">"], pub: [">"], ...(spec.auto ? { auto: spec.auto } : {}) } },
        { sub: "conformance", exp: spec.ttlSec ? Math.floor(Date.now() / 1000) + spec.ttlSec : "10m" },
      ),
    publish: (channel, data) =>
      waitFor(
        async () => {
          const r = await httpPublish(gw.url, channel, data, { "x-api-key": API_KEY }).catch(() => undefined);
          return r?.status === 201 ? (r.body.seq as number) : undefined;
        },
        { timeoutMs: 15_000, what: `publish to ${channel}` },
      ),
    async fault(name: string, step: Step) {
      if (name === "cut") proxy.cut();
      else if (name === "refuse") proxy.refuse(true);
      else if (name === "accept") proxy.refuse(false);
      else if (name === "kill_workers") for (const pid of await childPids(gw.process.pid!)) process.kill(pid, "SIGKILL");
      else if (name === "recreate_stream") {
        const jsm = await jetstreamManager(nc);
        const old = await jsm.streams.info("EVENTS");
        await jsm.streams.delete("EVENTS");
        await jsm.streams.add(old.config);
      } else if (name === "wait") await new Promise((r) => setTimeout(r, step.ms as number));
      else throw new Error(`unknown fault ${name}`);
    },
    async close() {
      await proxy.close();
      await nc.close();
      await gw.stop();
      await nats.stop();
    },
  };
}

/** A loopback TCP proxy to the gateway: `cut()` drops every connection; while refusing, new ones are dropped at once. */
async function startProxy(targetPort: number): Promise<{ port: number; cut(): void; refuse(on: boolean): void; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let refusing = false;
  const server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = createConnection({ host: "127.0.0.1", port: targetPort });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined).on("close", () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const cut = () => {
    for (const s of sockets) s.destroy();
  };
  return {
    port: (server.address() as { port: number }).port,
    cut,
    refuse(on) {
      refusing = on;
      if (on) cut();
    },
    close: () => {
      cut();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}
