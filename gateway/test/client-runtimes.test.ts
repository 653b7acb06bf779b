// The TypeScript SDK in every runtime the client README claims (gateway/testkit/sdk-runtimes.ts), against a real
// gateway (JWT auth) and a real nats-server: the gateway down at the first connect, the gateway stopped
// (SIGINT) under a live client and started again on the same port, and a refused token. Node 22's own
// WebSocket reports a refused connection or upgrade with `error` and no `close`: each case stopped there
// before (issue 48).
import { randomUUID } from "node:crypto";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import type { Browser } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ClientEvent } from "../conformance/runner.js";
import { AUDIENCE, ISSUER, SECRET, sign } from "#testkit/auth.js";
import { launchChromium } from "#testkit/chromium.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { browserRuntime, nodeRuntimes, startPageServer, type SdkClient } from "#testkit/sdk-runtimes.js";
import { waitFor } from "#testkit/wait.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let gw: GatewayHandle | undefined;
let port: number;
let browser: Browser;
let pages: Awaited<ReturnType<typeof startPageServer>>;
const clients: SdkClient[] = [];
const ALL = { channels: { sub: [">"], pub: [">"] } };
const OPTIONS = { minDelayMs: 50, maxDelayMs: 300 };

/** The gateway on `port` (a free one below the ephemeral range at first, so that it is still free after a stop). */
async function startOn(p: number): Promise<GatewayHandle> {
  return startGateway({
    natsUrl: nats.url,
    workers: 1,
    logLevel: "info",
    port: p,
    env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE },
  });
}

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  for (let tries = 0; !gw; tries++) {
    const p = 10_000 + Math.floor(Math.random() * 20_000);
    gw = await startOn(p).catch((e: unknown) => {
      if (tries >= 4) throw e;
      return undefined;
    });
    port = p;
  }
  pages = await startPageServer();
  browser = await launchChromium();
});
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.stop()));
  gw ??= await startOn(port);
});
afterAll(async () => {
  await browser?.close();
  await pages?.close();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

const wsUrl = () => `ws://127.0.0.1:${port}/ws`;

/** Stops the gateway with SIGINT (a graceful stop: clients get 1001) and waits for its exit. */
async function stopGateway(): Promise<void> {
  await gw!.stop("SIGINT");
  gw = undefined;
}

/** Publishes `{n}` for each n straight to the stream (the gateway may be down). */
async function publish(channel: string, ...ns: number[]): Promise<void> {
  const js = jetstream(nc);
  for (const n of ns) await js.publish(`ev.${channel}`, JSON.stringify({ n }));
}

const ofType = (c: SdkClient, event: string): ClientEvent[] => c.events.filter((e) => e.event === event);
const received = (c: SdkClient): number[] => ofType(c, "message").map((m) => (m.data as { n: number }).n);

async function expectMessages(c: SdkClient, want: number[]): Promise<void> {
  await waitFor(() => received(c).length >= want.length, { timeoutMs: 20_000, what: `messages ${JSON.stringify(want)}` }).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; events: ${JSON.stringify(c.events)}`);
  });
  expect(received(c)).toEqual(want);
  const seqs = ofType(c, "message").map((m) => m.seq as number);
  expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
  expect(new Set(seqs).size).toBe(seqs.length);
}

/** Waits until the client has made `n` more attempts (connecting events) than `from`, each after a disconnected. */
async function attempts(c: SdkClient, n: number, from = 0): Promise<void> {
  await waitFor(() => ofType(c, "connecting").length >= from + n, { timeoutMs: 20_000, what: `${n} connection attempts` }).catch((e: unknown) => {
    throw new Error(`${(e as Error).message}; events: ${JSON.stringify(c.events)}`);
  });
}

const runtimes = [
  ...nodeRuntimes(),
  browserRuntime(
    () => browser,
    () => pages.url,
  ),
];

describe.each(runtimes)("sdk runtimes — $name", (runtime) => {
  const start = async (): Promise<SdkClient> => {
    const c = await runtime.start();
    clients.push(c);
    return c;
  };

  it("sdk runtimes — gateway down at the first connect: keeps trying with backoff, connect() settles when it is back", async () => {
    const channel = `rt.down.${randomUUID().slice(0, 8)}`;
    await stopGateway();
    const c = await start();
    const connected = c.send({ cmd: "connect", url: wsUrl(), token: await sign(ALL), options: OPTIONS }, 60_000);
    await attempts(c, 4);
    expect(ofType(c, "connecting").map((e) => e.attempt)).toEqual(expect.arrayContaining([0, 1, 2, 3]));
    expect(ofType(c, "disconnected").every((e) => e.willReconnect === true)).toBe(true);
    expect(ofType(c, "error")).toEqual([]); // a gateway that is down refuses nothing: nothing to report
    gw = await startOn(port);
    expect(await connected).toMatchObject({ ok: true });
    expect(await c.send({ cmd: "subscribe", sub: "s", channel, from: "all" })).toMatchObject({ ok: true });
    await publish(channel, 1);
    await expectMessages(c, [1]);
  });

  it("sdk runtimes — gateway stopped (SIGINT) under a live client: reconnects when it is back and resumes, every message once, in order", async () => {
    const channel = `rt.stop.${randomUUID().slice(0, 8)}`;
    const c = await start();
    expect(await c.send({ cmd: "connect", url: wsUrl(), token: await sign(ALL), options: OPTIONS })).toMatchObject({ ok: true });
    expect(await c.send({ cmd: "subscribe", sub: "s", channel, from: "all" })).toMatchObject({ ok: true });
    await publish(channel, 1);
    await expectMessages(c, [1]);
    await stopGateway();
    await publish(channel, 2, 3);
    const before = ofType(c, "connecting").length;
    await attempts(c, 3, before); // still trying while the gateway is down
    gw = await startOn(port);
    await expectMessages(c, [1, 2, 3]);
    await publish(channel, 4);
    await expectMessages(c, [1, 2, 3, 4]);
    expect(ofType(c, "disconnected")[0]).toMatchObject({ code: 1001, willReconnect: true });
  });

  it("sdk runtimes — a refused token: an error event with its code, connect() rejects with it, no more attempts; with getToken one more attempt", async () => {
    const expired = await sign(ALL, { exp: Math.floor(Date.now() / 1000) - 60 });
    const c = await start();
    const reply = await c.send({ cmd: "connect", url: wsUrl(), token: expired, options: OPTIONS });
    expect(reply).toMatchObject({ ok: false, error: { code: "unauthorized", temporary: false } });
    expect(ofType(c, "connecting")).toHaveLength(1);
    expect(ofType(c, "error")).toEqual([{ event: "error", code: "unauthorized", temporary: false }]);
    expect(ofType(c, "disconnected").at(-1)).toMatchObject({ willReconnect: false });

    const d = await start();
    const renewed = await d.send({ cmd: "connect", url: wsUrl(), token: expired, getToken: true, options: OPTIONS });
    expect(renewed).toMatchObject({ ok: false, error: { code: "unauthorized" } });
    expect(ofType(d, "connecting")).toHaveLength(2); // the first refusal, then one attempt with getToken's token
    expect(ofType(d, "error").map((e) => e.code)).toEqual(["unauthorized", "unauthorized"]);
  });
});
