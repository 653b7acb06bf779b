import { mkdirSync, readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import type { Browser, Page, Request } from "playwright-core";
import { launchChromium } from "#testkit/chromium.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 2, logLevel: "info", args: ["--restart-backoff", "100ms"] });
  // launch() gives every run a fresh temporary profile (user-data-dir), removed on close.
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
  page.on("pageerror", (e) => pageErrors.push(e.message));
});
afterAll(async () => {
  await browser?.close();
  await gw?.stop();
  await nats?.stop();
});

/** Seqs of the message rows shown in the page, oldest first. */
const shownSeqs = (): Promise<number[]> =>
  page.$$eval("#messages tbody tr[data-seq]", (rows) => rows.map((r) => Number((r as HTMLElement).dataset.seq)).reverse());

/** The text of the first element matching `sel`, or null (without waiting for it, as page.textContent would). */
const textOf = (sel: string): Promise<string | null> => page.evaluate((s) => document.querySelector(s)?.textContent ?? null, sel);

/** Subscribes through the page's console (live) and waits for the page to say it did. */
async function subscribeInPage(channel: string): Promise<void> {
  await page.fill("#sub-channel", channel);
  await page.selectOption("#sub-start", "live");
  await page.click("#sub-form button[type=submit]");
  await page.waitForSelector(`#events li:has-text("subscribed ${channel}")`, { timeout: 10_000 });
}

function publishHttp(channel: string, data: unknown, key: string): Promise<number> {
  return waitFor(
    async () => {
      const r = await httpPublish(gw.url, channel, data, { "idempotency-key": key });
      return r.status === 201 ? (r.body.seq as number) : undefined;
    },
    { timeoutMs: 15_000, what: `publish ${key}` },
  );
}

describe("browser — the live page in headless Chromium", () => {
  it("browser — subscribes through the console, shows HTTP publishes by seq, resumes without loss after the workers are killed", async () => {
    const channel = `web.${randomUUID().slice(0, 8)}`;
    await page.goto(`${gw.url}/`);
    await page.waitForSelector("#conn-state[data-state=connected]", { timeout: 10_000 });

    await page.fill("#sub-channel", channel);
    await page.selectOption("#sub-start", "live");
    await page.click("#sub-form button[type=submit]");
    await page.waitForSelector(`#events li:has-text("subscribed ${channel}")`, { timeout: 10_000 });

    const published: number[] = [];
    for (let i = 0; i < 10; i++) published.push(await publishHttp(channel, { i }, `${channel}-${i}`));
    await waitFor(async () => (await shownSeqs()).length === 10, { timeoutMs: 10_000, what: "10 rows" });

    // Kill every worker (so certainly the one holding the page's socket); the primary restarts them.
    const workers = await childPids(gw.process.pid!);
    expect(workers).toHaveLength(2);
    for (const pid of workers) process.kill(pid, "SIGKILL");
    for (let i = 10; i < 30; i++) published.push(await publishHttp(channel, { i }, `${channel}-${i}`));

    await waitFor(async () => (await shownSeqs()).length >= 30, { timeoutMs: 20_000, what: "30 rows after the restart" }).catch(async (e) => {
      throw new Error(
        `${(e as Error).message}; shown ${JSON.stringify(await shownSeqs())}, published ${JSON.stringify(published)}, page events: ${await page.textContent("#events")}, state: ${await page.textContent("#conn-state")} ${await page.textContent("#conn-detail")}`,
      );
    });
    expect(await shownSeqs()).toEqual(published); // every seq once, in order
    await page.waitForSelector("#conn-state[data-state=connected]");
    expect(Number(await page.textContent("#page-reconnects"))).toBeGreaterThanOrEqual(1);
    expect(await page.textContent("#page-gaps")).toBe("0");

    // Publish through the page's console: the reply's seq is shown and the message arrives as a row.
    await page.fill("#pub-channel", channel);
    await page.fill("#pub-data", '{"from":"page"}');
    await page.click("#pub-form button[type=submit]");
    const result = await page.waitForSelector("#pub-result:has-text('seq')", { timeout: 10_000 });
    const seq = Number(/seq (\d+)/.exec((await result.textContent()) ?? "")?.[1]);
    expect(seq).toBeGreaterThan(published.at(-1)!);
    await page.waitForSelector(`#messages tr[data-seq="${seq}"]`, { timeout: 10_000 });

    // The status panel is fed by /v1/stats: both (restarted) workers, our connection, our channel.
    await waitFor(
      async () =>
        (await page.textContent("#stat-workers")) === "2" &&
        Number(await page.textContent("#stat-connections")) >= 1 &&
        Number(await page.textContent("#stat-channels")) >= 1,
      { timeoutMs: 10_000, what: "status panel" },
    );
    await waitFor(async () => /ms$/.test((await page.textContent("#stat-p50")) ?? ""), { timeoutMs: 10_000, what: "latency percentiles" });

    mkdirSync("test-artifacts", { recursive: true });
    await page.screenshot({ path: "test-artifacts/browser.png", fullPage: true });
    expect(pageErrors).toEqual([]);
  });

  it("browser — the live page charts connections, deliveries/s and latency from /v1/stats, per worker", async () => {
    const channel = `chart.${randomUUID().slice(0, 8)}`;
    await page.goto(`${gw.url}/`);
    await page.waitForSelector("#conn-state[data-state=connected]", { timeout: 10_000 });
    await page.fill("#sub-channel", channel);
    await page.click("#sub-form button[type=submit]");
    await page.waitForSelector(`#events li:has-text("subscribed ${channel}")`, { timeout: 10_000 });

    type Series = Record<string, (number | null)[][]> & { t: number[] };
    const series = () => page.evaluate(() => (window as unknown as { liveCharts?: { series(): unknown } }).liveCharts?.series()) as Promise<Series | undefined>;
    // Publish a few messages a round until the deliveries chart has three non-zero points (the page samples once a second).
    let n = 0;
    const s = await waitFor(
      async () => {
        for (let i = 0; i < 5; i++) expect((await httpPublish(gw.url, channel, { n: n++ })).status).toBe(201);
        const cur = await series();
        return cur && cur.deliveries![0]!.filter((v) => (v ?? 0) > 0).length >= 3 ? cur : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: "three non-zero points on the deliveries chart" },
    );

    // One series for the cluster, then one per worker (2): the workers' shares add up to the total.
    expect(s.deliveries).toHaveLength(3);
    expect(s.connections).toHaveLength(3);
    const [all, w1, w2] = s.deliveries as [(number | null)[], (number | null)[], (number | null)[]];
    const i = all.findLastIndex((v, k) => (v ?? 0) > 0 && w1[k] !== null && w2[k] !== null);
    expect(i).toBeGreaterThanOrEqual(0);
    expect(Math.abs(w1[i]! + w2[i]! - all[i]!)).toBeLessThanOrEqual(0.2); // each rounded to 0.1
    expect(s.connections![0]!.at(-1)).toBeGreaterThanOrEqual(1); // this page's socket
    expect(s.publishes![0]!.some((v) => (v ?? 0) > 0)).toBe(true);
    expect(s.latency![0]![i]).toBeGreaterThan(0); // p50 of that second's deliveries
    // Every chart is drawn on a canvas of the card's width.
    const canvases = await page.$$eval(".chart canvas", (cs) => cs.map((c) => (c as HTMLCanvasElement).width));
    expect(canvases).toHaveLength(4);
    for (const w of canvases) expect(w).toBeGreaterThan(200);
    expect(await page.textContent("#charts-note")).toBe("");

    // docs/img/live-page.png is taken on request only, so test runs leave the tree clean; for it, 40 s of a
    // varying load give the charts a shape.
    if (process.env.UPDATE_SCREENSHOT === "1") {
      const until = Date.now() + 40_000;
      await waitFor(
        async () => {
          const burst = 5 + Math.round(20 * (1 + Math.sin(Date.now() / 4_000)));
          await Promise.all(Array.from({ length: burst }, () => httpPublish(gw.url, channel, { n: n++ })));
          return Date.now() > until;
        },
        { timeoutMs: 60_000, intervalMs: 250, what: "the screenshot's load" },
      );
      await page.screenshot({ path: "docs/img/live-page.png" });
    }
    expect(pageErrors).toEqual([]);
  }, 90_000);

  it("browser — the occupancy panel counts the page's channel and pattern across the workers, up and down", async () => {
    const id = randomUUID().slice(0, 8);
    const [channel, pattern] = [`occ.${id}.room`, `top.${id}.>`];
    const asked: string[] = [];
    const onRequest = (r: Request) => void (r.url().includes("/v1/server/occupancy") && asked.push(decodeURIComponent(new URL(r.url()).search)));
    await page.goto(`${gw.url}/`);
    await page.waitForSelector("#conn-state[data-state=connected]", { timeout: 10_000 });
    // Listened from here: the previous test's page may still ask for its own channel until the new one has loaded.
    page.on("request", onRequest);
    await subscribeInPage(channel);
    await subscribeInPage(pattern);

    const count = (c: string) => textOf(`#occ-subs li[data-channel="${c}"] .occ-count`);
    const counts = async () => [await count(channel), await count(pattern)];
    const shows = (want: (string | null)[]) =>
      waitFor(async () => JSON.stringify(await counts()) === JSON.stringify(want), { timeoutMs: 10_000, what: `counts ${want}` }).catch(async (e) => {
        throw new Error(`${(e as Error).message}; shown ${JSON.stringify(await counts())}, note: ${await textOf("#occ-note")}`);
      });
    await shows(["1", "1"]); // the page's own subscriptions

    // Two more subscribers of the channel and one within the pattern, on whichever workers they land.
    const others = await Promise.all([0, 1, 2].map(() => TestClient.connect(gw.wsUrl)));
    try {
      await Promise.all([others[0]!.sub(channel), others[1]!.sub(channel), others[2]!.sub(`top.${id}.a`)]);
      await shows(["3", "2"]);
      expect(await textOf("#occupancy")).toMatch(new RegExp(`top\\.${id}\\.a 1`)); // the pattern's subscriptions, listed
      expect(await page.getAttribute("#occupancy", "data-state")).toBe("ok");
      expect([await textOf("#occ-instances"), await textOf("#occ-workers"), await textOf("#occ-complete")]).toEqual(["1", "2", "yes"]);
    } finally {
      for (const c of others) c.close();
    }
    await shows(["1", "1"]);
    // A channel is asked by channel (the subscriptions that receive it), a pattern by pattern (those within it).
    expect(new Set(asked)).toEqual(new Set([`?channel=${channel}`, `?pattern=${pattern}`]));
    page.off("request", onRequest);
    expect(pageErrors).toEqual([]);
  });

  it("browser — the README's page example runs as written", async () => {
    const readme = readFileSync("gateway/client/README.md", "utf8");
    const script = /```html\n<script type="module">\n([\s\S]*?)<\/script>\n```/.exec(readme)?.[1];
    expect(script).toBeTruthy();
    const logs: string[] = [];
    const onConsole = (m: { text(): string }) => void logs.push(m.text());
    page.on("console", onConsole);
    await page.goto(`${gw.url}/`);
    await page.addScriptTag({ type: "module", content: script! });
    await waitFor(() => logs.find((l) => /^stored as seq \d+$/.test(l)), { timeoutMs: 10_000, what: `"stored as seq" (console: ${JSON.stringify(logs)})` });
    await waitFor(() => logs.find((l) => / chat\.lobby /.test(l)), { timeoutMs: 10_000, what: "the message delivered to the example's handler" });
    page.off("console", onConsole);
  });

  it("browser — /client.js is served as JavaScript and imports in the page", async () => {
    const r = await fetch(`${gw.url}/client.js`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/javascript/);
    // A string, so vitest does not rewrite the dynamic import.
    const type = await page.evaluate("import('/client.js').then((m) => typeof m.GatewayClient)");
    expect(type).toBe("function");
    const etag = r.headers.get("etag")!;
    expect((await fetch(`${gw.url}/client.js`, { headers: { "if-none-match": etag } })).status).toBe(304);
    // HEAD answers as GET does, without the body (it used to be 404).
    const head = await fetch(`${gw.url}/client.js`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(head.headers.get("etag")).toBe(etag);
    expect(Number(head.headers.get("content-length"))).toBe((await r.text()).length);
    expect((await fetch(`${gw.url}/`, { method: "HEAD" })).status).toBe(200);
    // The charting library comes from the gateway's own node_modules, with its license.
    const lib = await fetch(`${gw.url}/vendor/uPlot.esm.js`);
    expect(lib.status).toBe(200);
    expect(lib.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(await lib.text()).toMatch(/export \{ uPlot as default \}/);
    expect(await (await fetch(`${gw.url}/vendor/uPlot.LICENSE.txt`)).text()).toMatch(/MIT License/);
  });
});

describe("browser — the occupancy panel where the control plane is out of the page's reach", () => {
  it("browser — with an admin listener the page's port answers 404: the panel says occupancy needs the admin API and stops asking", async () => {
    // The control plane is on the admin listener (ADMIN_PORT) and not on the port that serves the page.
    const admin = await startGateway({ natsUrl: nats.url, workers: 1, logLevel: "info", args: ["--admin-port", "0"] });
    const requests: string[] = [];
    const onRequest = (r: Request) => void requests.push(new URL(r.url()).pathname);
    page.on("request", onRequest);
    try {
      await page.goto(`${admin.url}/`);
      await page.waitForSelector("#conn-state[data-state=connected]", { timeout: 10_000 });
      await subscribeInPage(`occ.${randomUUID().slice(0, 8)}`);
      await page.waitForSelector("#occupancy[data-state=refused]", { timeout: 10_000 });
      expect(await textOf("#occ-note")).toMatch(/^occupancy needs the admin API \(ADMIN_PORT\).*Not polling\.$/);
      const asked = () => requests.filter((p) => p === "/v1/server/occupancy").length;
      expect(asked()).toBe(1);
      // The stats panel asks once a second on its own: three more of its requests are three seconds in which
      // the occupancy panel asked nothing.
      const stats = () => requests.filter((p) => p === "/v1/stats").length;
      const from = stats();
      await waitFor(() => stats() >= from + 3, { timeoutMs: 10_000, what: "three more /v1/stats requests" });
      expect(asked()).toBe(1);
      expect(await textOf("#occ-subs")).toBe("");
      expect(pageErrors).toEqual([]);
    } finally {
      page.off("request", onRequest);
      await admin.stop();
    }
  });
});
