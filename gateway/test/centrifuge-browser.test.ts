// The Centrifuge JavaScript SDK (centrifuge 5.7.4, its browser bundles from npm) in headless Chromium against
// the Centrifuge door, over JSON and over Protobuf: connect with a token, subscribe, receive in order,
// recover the publications missed while the link was down (cut by a TCP proxy), and
// history. The browser's own WebSocket, not the `ws` package.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIENCE, ISSUER, SECRET, sign } from "#testkit/auth.js";
import { launchChromium } from "#testkit/chromium.js";
import { uniqueNames } from "#testkit/clients.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { publishMany } from "#testkit/stream-fill.js";
import { startTcpProxy, type TcpProxy } from "#testkit/tcp-proxy.js";
import { waitFor } from "#testkit/wait.js";
import { httpPublish } from "#testkit/ws-client.js";

const MISSED = 300;
/** A browser bundle of the SDK (its dist/ is outside the package's exports: found beside its entry, build/). */
const bundle = (name: string): string => readFileSync(join(dirname(createRequire(import.meta.url).resolve("centrifuge")), "..", "dist", name), "utf8");

let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let proxy: TcpProxy;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];
const uniq = uniqueNames();

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE } });
  nc = await natsConnect({ servers: nats.url });
  proxy = await startTcpProxy({ host: "127.0.0.1", port: gw.port });
  browser = await launchChromium();
  page = await browser.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.message));
  // A page from this host (a loopback page may open loopback sockets; Chromium blocks a page with no address,
  // such as one a route fulfils): the gateway's 404, with both SDK builds in it.
  await page.goto(`${gw.url}/centrifuge-browser-test`);
  for (const [name, global] of [
    ["centrifuge.js", "CfJSON"],
    ["centrifuge.protobuf.js", "CfProtobuf"],
  ] as const) {
    await page.addScriptTag({ content: bundle(name) });
    await page.evaluate((g) => Object.assign(globalThis, { [g]: (globalThis as { Centrifuge?: unknown }).Centrifuge }), global);
  }
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await proxy?.close();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

/** What the page's client saw: each publication's `i` and offset, and each subscribed event. */
type Seen = { state: string; is: number[]; subscribed: { recovered: boolean; wasRecovering: boolean }[] };
const seen = (): Promise<Seen> => page.evaluate(() => (globalThis as unknown as { seen: Seen }).seen);

describe.each(["JSON", "Protobuf"] as const)("centrifuge door — the JavaScript SDK in Chromium over %s", (format) => {
  it("connects with a token, receives in order, recovers what it missed while the link was down, reads history", async () => {
    const n = uniq("browser");
    const token = await sign({ channels: { sub: [">"], pub: [">"] } }, { sub: "chromium" });
    await page.evaluate(
      async ({ format, url, token, channel }) => {
        type Sdk = new (
          url: string,
          o: object,
        ) => {
          state: string;
          connect(): void;
          ready(ms: number): Promise<void>;
          on(e: string, f: (x: never) => void): void;
          newSubscription(ch: string, o: object): { subscribe(): void; ready(ms: number): Promise<void>; on(e: string, f: (x: never) => void): void };
        };
        const g = globalThis as unknown as Record<string, unknown>;
        const Sdk = g[`Cf${format}`] as Sdk;
        // The Protobuf build hands data over as bytes: here JSON's.
        const value = (d: unknown) => (format === "JSON" ? d : JSON.parse(new TextDecoder().decode(d as Uint8Array))) as { i: number };
        const seen: Seen = { state: "", is: [], subscribed: [] };
        const c = new Sdk(url, { token, minReconnectDelay: 50, maxReconnectDelay: 300 });
        c.on("state", (e: { newState: string }) => (seen.state = e.newState));
        const sub = c.newSubscription(channel, { recoverable: true, positioned: true });
        sub.on("publication", (p: { data: unknown }) => seen.is.push(value(p.data).i));
        sub.on("subscribed", (s: { recovered: boolean; wasRecovering: boolean }) =>
          seen.subscribed.push({ recovered: s.recovered, wasRecovering: s.wasRecovering }),
        );
        Object.assign(g, { seen, client: c, value });
        c.connect();
        sub.subscribe();
        await sub.ready(10_000).catch((e: unknown) => {
          throw new Error(`not subscribed: ${JSON.stringify(e)} state ${seen.state}`);
        });
      },
      { format, url: `ws://127.0.0.1:${proxy.port}/connection/websocket`, token, channel: `cf:${n}` },
    );
    for (let i = 0; i < 5; i++) expect((await httpPublish(gw.url, `cf.${n}`, { i }, { authorization: `Bearer ${token}` })).status).toBe(201);
    await waitFor(async () => (await seen()).is.length === 5 || undefined, { what: "5 publications" });

    proxy.refuse(true);
    await waitFor(async () => (await seen()).state !== "connected" || undefined, { what: "the page to see the link down" });
    await publishMany(jetstream(nc), `cf.${n}`, MISSED, 5);
    proxy.refuse(false);
    await waitFor(async () => (await seen()).is.length === 5 + MISSED || undefined, { what: `${MISSED} recovered publications`, timeoutMs: 30_000 });
    const s = await seen();
    expect(s.subscribed).toEqual([
      { recovered: false, wasRecovering: false },
      { recovered: true, wasRecovering: true },
    ]);
    expect(s.is).toEqual(Array.from({ length: 5 + MISSED }, (_, i) => i));

    const newest = await page.evaluate(async (channel) => {
      const g = globalThis as unknown as {
        client: { history(ch: string, o: object): Promise<{ publications: { data: unknown }[] }> };
        value: (d: unknown) => { i: number };
      };
      const h = await g.client.history(channel, { limit: 3, reverse: true });
      return h.publications.map((p) => g.value(p.data).i);
    }, `cf:${n}`);
    expect(newest).toEqual([MISSED + 4, MISSED + 3, MISSED + 2]);
    await page.evaluate(() => (globalThis as unknown as { client: { disconnect(): void } }).client.disconnect());
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
