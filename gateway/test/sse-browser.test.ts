// Server-Sent Events in real headless Chromium: the browser's own EventSource and the SDK's subscribeEvents
// resume across a SIGKILL of the worker serving them (Last-Event-ID on reconnect, `retry:` honoured).
import { randomUUID } from "node:crypto";
import type { Browser, Page } from "playwright-core";
import { launchChromium } from "#testkit/chromium.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { connectionInodes, pidsHoldingInodes, serverSockets } from "#testkit/proc-sockets.js";
import { httpPublish } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];
/** Last-Event-ID headers of the page's answered requests for event streams, in order. */
const streamRequests: { url: string; lastEventId?: string }[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, logLevel: "info", args: ["--restart-backoff", "100ms", "--sse-retry", "300ms"] });
  browser = await launchChromium();
  page = await browser.newPage();
  page.on("pageerror", (e) => pageErrors.push(e.message));
  // Answered requests only: a reconnect refused while no worker listens has no final headers to read.
  page.on("response", (res) => {
    const req = res.request();
    if (!req.url().includes("/events")) return;
    void req.allHeaders().then((h) => streamRequests.push({ url: req.url(), lastEventId: h["last-event-id"] }));
  });
});
afterAll(async () => {
  await browser?.close();
  await gw?.stop();
  await nats?.stop();
});

function publishHttp(channel: string, data: unknown, key: string): Promise<number> {
  return waitFor(
    async () => {
      const r = await httpPublish(gw.url, channel, data, { "idempotency-key": key });
      return r.status === 201 ? (r.body.seq as number) : undefined;
    },
    { timeoutMs: 20_000, what: `publish ${key}` },
  );
}

/**
 * Workers holding Chromium's connections (every connection to the gateway whose client side is not this
 * process's own publishes). Chromium may run an EventSource over the page's idle keep-alive connection, so
 * all of them count: the workers serving the two streams are among these.
 */
function workersServingBrowser(workers: number[]): number[] {
  const browserSockets = serverSockets(gw.port).filter((s) => pidsHoldingInodes([process.pid], connectionInodes(s.clientPort, gw.port)).length === 0);
  return pidsHoldingInodes(
    workers,
    browserSockets.map((s) => s.inode),
  );
}

describe("sse browser — EventSource in headless Chromium", () => {
  it("sse browser — EventSource and subscribeEvents resume across a SIGKILL of the serving worker: Last-Event-ID sent, every seq once, in order", async () => {
    const channel = `sse.${randomUUID().slice(0, 8)}`;
    await page.goto(`${gw.url}/healthz`);
    // A string, so that vitest's transform leaves the dynamic import to the browser.
    await page.evaluate('import("/client.js").then((m) => { window.sdk = m; })');
    await page.evaluate((ch) => {
      const w = window as unknown as Record<string, unknown> & { sdk: typeof import("../client/src/index.js") };
      const raw: number[] = [];
      const sdk: number[] = [];
      const states: number[] = [];
      const es = new EventSource(`/v1/channels/${encodeURIComponent(ch)}/events`);
      es.onmessage = (ev) => raw.push((JSON.parse(ev.data as string) as { seq: number }).seq);
      es.onerror = () => states.push(es.readyState);
      w.sub = w.sdk.subscribeEvents(location.origin, ch, (m) => void sdk.push(m.seq));
      Object.assign(w, { raw, sdkSeqs: sdk, states, es });
    }, channel);
    const opened = await waitFor(() => (streamRequests.length >= 2 ? streamRequests.slice() : undefined), { what: "two stream requests" });
    expect(opened.every((r) => r.lastEventId === undefined)).toBe(true);
    // The streams are open (their preamble is in) before the first publish: both start live.
    await waitFor(() => page.evaluate(() => (window as unknown as { es: EventSource }).es.readyState === 1) || undefined, { what: "EventSource open" });

    const seqsOf = (name: "raw" | "sdkSeqs"): Promise<number[]> => page.evaluate((n) => (window as unknown as Record<string, number[]>)[n]!, name);
    const published: number[] = [];
    for (let i = 0; i < 10; i++) published.push(await publishHttp(channel, { i }, `${channel}-${i}`));
    await waitFor(async () => (await seqsOf("raw")).length === 10 && (await seqsOf("sdkSeqs")).length === 10, { what: "10 messages in the page" });

    const workers = await childPids(gw.process.pid!);
    expect(workers).toHaveLength(2);
    const serving = workersServingBrowser(workers);
    expect(serving.length).toBeGreaterThanOrEqual(1);
    const requestsBefore = streamRequests.length;
    for (const pid of serving) process.kill(pid, "SIGKILL");
    for (let i = 10; i < 30; i++) published.push(await publishHttp(channel, { i }, `${channel}-${i}`));

    const all = async (): Promise<string> =>
      `raw ${JSON.stringify(await seqsOf("raw"))}, sdk ${JSON.stringify(await seqsOf("sdkSeqs"))}, published ${JSON.stringify(published)}, requests ${JSON.stringify(streamRequests)}`;
    await waitFor(async () => (await seqsOf("raw")).length >= 30 && (await seqsOf("sdkSeqs")).length >= 30, {
      timeoutMs: 30_000,
      what: "30 messages after the kill",
    }).catch(async (e) => {
      throw new Error(`${(e as Error).message}; ${await all()}`);
    });
    expect(await seqsOf("raw")).toEqual(published);
    expect(await seqsOf("sdkSeqs")).toEqual(published);

    // The browser reconnected by itself (never CLOSED) and sent the id of the last message it had.
    const states = await page.evaluate(() => (window as unknown as { states: number[] }).states);
    expect(states.length).toBeGreaterThanOrEqual(1);
    expect(states).not.toContain(2);
    const resumed = streamRequests.slice(requestsBefore);
    expect(resumed.length).toBeGreaterThanOrEqual(1);
    const epoch = published.length > 0 ? resumed[0]!.lastEventId?.split(":").slice(0, -1).join(":") : "";
    // Each reconnect says where it was: the browser's Last-Event-ID header, or (a stream the SDK had to reopen
    // itself after the EventSource gave up) its last_event_id parameter.
    for (const r of resumed) {
      const id = r.lastEventId ?? new URL(r.url).searchParams.get("last_event_id") ?? undefined;
      expect(id, JSON.stringify(resumed)).toMatch(/^.+:\d+$/);
    }
    expect(resumed.some((r) => r.lastEventId === `${epoch}:${published[9]}`)).toBe(true);
    expect(pageErrors).toEqual([]);
    await page.evaluate(() => {
      (window as unknown as { es: EventSource }).es.close();
      (window as unknown as { sub: { close(): void } }).sub.close();
    });
  }, 90_000);

  it("sse browser — subscribeEvents ends on a permanent refusal and reports the server's code", async () => {
    const err = await page.evaluate(
      () =>
        new Promise<{ code: string; temporary: boolean }>((resolve) => {
          const w = window as unknown as { sdk: typeof import("../client/src/index.js") };
          w.sdk.subscribeEvents(location.origin, "bad..pattern", () => undefined, {
            onError: (e) => {
              if (!e.temporary) resolve({ code: e.code, temporary: e.temporary });
            },
          });
        }),
    );
    expect(err).toEqual({ code: "bad_channel", temporary: false });
    expect(pageErrors).toEqual([]);
  });
});
