// docs/examples/events-consumer.mjs, run as a backend would run it, against a real nats-server and a real
// gateway recording a socket's events (EVENTS=connect,…, no webhook; the cluster-wide channel.occupied would come
// between them at a moment of its own): it prints a socket's events with their ids, and a second
// run of the same durable goes on where the first stopped. Keeps the documented example from rotting.
import { spawn } from "node:child_process";
import { resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PACKAGE_ROOT } from "../src/config/config.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { TestClient } from "#testkit/ws-client.js";
import { uniqueNames } from "#testkit/clients.js";

const EXAMPLE = resolve(PACKAGE_ROOT, "docs/examples/events-consumer.mjs");
type Event = { id: number; type: string; client: string; channel?: string };

let nats: NatsServerHandle;
let gw: GatewayHandle;
const uniq = uniqueNames();

/** Runs the example until it has printed `count` events; resolves with them. */
function runExample(count: number, durable: string): Promise<Event[]> {
  const child = spawn(process.execPath, [EXAMPLE, "--durable", durable, "--count", String(count)], {
    env: { ...process.env, NATS_URL: nats.url },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (err += d.toString()));
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  return new Promise((done, fail) =>
    child.on("exit", (code) => {
      clearTimeout(timer);
      if (code !== 0) return fail(new Error(`the example exited ${code}: ${err}\n${out}`));
      done(
        out
          .trim()
          .split("\n")
          .map((l) => JSON.parse(l) as Event),
      );
    }),
  );
}

async function lifeOf(channel: string): Promise<void> {
  const c = await TestClient.connect(gw.wsUrl);
  await c.sub(channel);
  c.ws.close(1000, "bye");
  await c.waitClosed();
}

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, env: { EVENTS: "connect,disconnect,subscribe,unsubscribe" } });
});
afterAll(async () => {
  await gw?.stop();
  await nats?.stop();
});

describe("events — the NATS consumer example (docs/examples/events-consumer.mjs)", () => {
  it("events — the example reads a socket's events with their ids, and its durable goes on where it stopped", async () => {
    const first = uniq("ex.first");
    await lifeOf(first);
    const events = await runExample(4, "example-backend");
    expect(events.map((e) => e.type)).toEqual(["connect", "subscribe", "unsubscribe", "disconnect"]);
    expect(events.map((e) => e.id)).toEqual([1, 2, 3, 4]);
    expect(events[1]?.channel).toBe(first);

    const second = uniq("ex.second");
    await lifeOf(second);
    const more = await runExample(4, "example-backend");
    expect(more.map((e) => e.id)).toEqual([5, 6, 7, 8]);
    expect(more[1]?.channel).toBe(second);
  });
});
