// Safe by default (issue 33): real gateways on a real nats-server. `open` runs with authentication off on every
// interface (HOST=0.0.0.0) and a namespace `ro` whose client publishing is off; `openAdmin` the same with its
// control plane on an admin listener on every interface (the primary's node:http door); `keyed` with authentication on,
// an admin key in API_KEYS and a publish key and a read key in API_KEYS_FILE; `plain` is `npm start`'s
// gateway: no settings, its own embedded nats-server.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import { connect as natsConnect } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { TestClient } from "#testkit/ws-client.js";
import { AUDIENCE, connect, ISSUER, refusal, SECRET } from "#testkit/auth.js";
import { SseReader } from "#testkit/sse-client.js";

const ADMIN_KEY = "admin-key-of-api-keys-0123456789";
const PUBLISH_KEY = "publish-key-0123456789abcdef";
const READ_KEY = "read-key-0123456789abcdef";
const JSON_TYPE = { "content-type": "application/json" };

let nats: NatsServerHandle;
let open: GatewayHandle;
let openAdmin: GatewayHandle;
let keyed: GatewayHandle;
let plain: GatewayHandle;
const clients: TestClient[] = [];
let n = 0;
const uniq = (base: string) => `${base}${++n}x${Date.now() % 100_000}`;

/** This host's address on a network interface, if it has one: requests to it are not from loopback. */
const external = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === "IPv4" && !a.internal)?.address;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "fgw-safe-"));
  const namespaces = join(dir, "namespaces.yaml");
  writeFileSync(namespaces, "namespaces:\n  ro:\n    features: { publish: false }\n");
  const keys = join(dir, "keys");
  writeFileSync(keys, `# backends\n${PUBLISH_KEY} publish\n${READ_KEY} read\n`);
  nats = await startNatsServer();
  const openArgs = ["--host", "0.0.0.0", "--namespaces-file", namespaces];
  [open, openAdmin, keyed, plain] = await Promise.all([
    startGateway({ natsUrl: nats.url, workers: 1, logLevel: "info", args: openArgs }),
    startGateway({ natsUrl: nats.url, workers: 1, logLevel: "info", args: [...openArgs, "--admin-port", "0", "--admin-host", "0.0.0.0"] }),
    startGateway({
      natsUrl: nats.url,
      workers: 1,
      logLevel: "info",
      args: ["--namespaces-file", namespaces, "--stream-name", "KEYED", "--subject-prefix", "kd"],
      env: { JWT_SECRET: SECRET, JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE, API_KEYS: ADMIN_KEY, API_KEYS_FILE: keys },
    }),
    startGateway({ workers: 1, logLevel: "info" }),
  ]);
});
afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all([open?.stop(), openAdmin?.stop(), keyed?.stop(), plain?.stop()]);
  await nats?.stop();
});

const warnings = (gw: GatewayHandle) => gw.logs.filter((l) => (l.level ?? 0) === 40).map((l) => String(l.msg));
const body = async (r: Response) => (await r.json()) as Record<string, unknown> & { error?: string };
/** The data of the channel's stored messages. */
const history = async (gw: GatewayHandle, ch: string, headers: Record<string, string> = {}) => {
  const r = (await body(await fetch(`${gw.url}/v1/channels/${encodeURIComponent(ch)}/messages`, { headers }))) as { messages: { data: unknown }[] };
  return r.messages.map((m) => m.data);
};

/** Both doors of the control plane with authentication off: the public port's (uWS) and the admin listener's (node:http). */
const doors = () => [
  { name: "public port", gw: open, base: open.url, port: open.port },
  { name: "admin listener", gw: openAdmin, base: openAdmin.metricsUrl, port: Number(new URL(openAdmin.metricsUrl).port) },
];

describe("safe defaults — the control plane with authentication off", () => {
  it("answers a request from this host, and refuses one through a proxy or from another address (403), on both doors", async () => {
    for (const d of doors()) {
      expect((await fetch(`${d.base}/v1/server/occupancy?channel=a`)).status, d.name).toBe(200);
      const proxied = await fetch(`${d.base}/v1/server/users/anon`, { headers: { "x-forwarded-for": "203.0.113.7" } });
      expect(proxied.status, d.name).toBe(403);
      expect((await body(proxied)).error).toBe("forbidden");
      const viaProxy = await fetch(`${d.base}/v1/server/disconnect`, {
        method: "POST",
        headers: { ...JSON_TYPE, forwarded: "for=203.0.113.7" },
        body: '{"user":"anon","reconnect":false}',
      });
      expect(viaProxy.status, d.name).toBe(403);
      if (external) {
        const far = await fetch(`http://${external}:${d.port}/v1/server/occupancy?pattern=%3E`);
        expect(far.status, d.name).toBe(403);
        expect((await body(far)).message).toMatch(/this host only/);
      }
    }
  });

  it("a page's simple request (text/plain, a form) or one with a foreign Origin changes nothing: 415 and 403 with a code", async () => {
    const victim = await TestClient.connect(open.wsUrl);
    clients.push(victim);
    for (const d of doors()) {
      const disconnect = (headers: Record<string, string>) =>
        fetch(`${d.base}/v1/server/disconnect`, { method: "POST", headers, body: '{"user":"anon","reconnect":false}' });
      const plainText = await disconnect({ "content-type": "text/plain" });
      expect(plainText.status, d.name).toBe(415);
      expect(await body(plainText)).toMatchObject({ error: "unsupported_media_type", temporary: false });
      expect((await disconnect({})).status, d.name).toBe(415);
      const foreign = await disconnect({ ...JSON_TYPE, origin: "https://evil.example" });
      expect(foreign.status, d.name).toBe(403);
      expect((await body(foreign)).error).toBe("forbidden");
    }
    expect(victim.open).toBe(true);

    const ch = uniq("csrf.x");
    const pub = await fetch(`${open.url}/v1/publish/${ch}`, { method: "POST", headers: { "content-type": "text/plain" }, body: '{"a":1}' });
    expect(pub.status).toBe(415);
    expect((await body(pub)).error).toBe("unsupported_media_type");
    const form = await fetch(`${open.url}/v1/publish`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: JSON.stringify([{ channel: ch, data: 1 }]),
    });
    expect(form.status).toBe(415);
    expect(await history(open, ch)).toEqual([]);
    // JSON (and NDJSON for a batch) still go through.
    expect(
      (await fetch(`${open.url}/v1/publish/${ch}`, { method: "POST", headers: { "content-type": "application/json; charset=utf-8" }, body: "{}" })).status,
    ).toBe(201);
    const ndjson = await fetch(`${open.url}/v1/publish`, {
      method: "POST",
      headers: { "content-type": "application/x-ndjson" },
      body: `${JSON.stringify({ channel: ch, data: 2 })}\n`,
    });
    expect(ndjson.status).toBe(200);
  });

  it("a page of another site cannot open a WebSocket or SSE stream, nor publish, while nothing identifies anyone; this host's pages can", async () => {
    const evil = { origin: "https://evil.example" };
    const ws = await refusal(open.wsUrl, { headers: evil });
    expect(ws.status).toBe(403);
    expect(JSON.parse(ws.body)).toMatchObject({ error: "forbidden", temporary: false });
    const sse = await fetch(`${open.url}/v1/channels/a.b/events`, { headers: { ...evil, accept: "text/event-stream" } });
    expect(sse.status).toBe(403);
    await sse.body?.cancel();
    const pub = await fetch(`${open.url}/v1/publish/${uniq("page.x")}`, { method: "POST", headers: { ...JSON_TYPE, ...evil }, body: "{}" });
    expect(pub.status).toBe(403);
    // A page of this host (a dev server on localhost), and the gateway's own page reached by the machine's name.
    clients.push(await connect(open.wsUrl, { headers: { origin: "http://localhost:3000" } }));
    if (external) clients.push(await connect(`ws://${external}:${open.port}/ws`, { headers: { origin: `http://${external}:${open.port}` } }));
    const mine = await SseReader.open(`${open.url}/v1/channels/a.b/events`, { origin: "http://127.0.0.1:5173" });
    expect(mine.status).toBe(200);
    mine.close();
  });

  it("the start warning says what is open: channels to whom, and the control plane to this host only", () => {
    const w = warnings(open).find((m) => m.startsWith("AUTHENTICATION IS OFF"));
    expect(w).toMatch(/HOST=0\.0\.0\.0/);
    expect(w).toMatch(/control plane .*this host/);
    expect(w).toMatch(/\/metrics and \/v1\/stats/);
  });
});

describe("safe defaults — broadcast passes the one chain", () => {
  it("a namespace with publish off refuses a broadcast's channel as it refuses a publish (feature_disabled); other channels are stored", async () => {
    const [ro, free] = [uniq("ro.b"), uniq("free.b")];
    expect((await fetch(`${open.url}/v1/publish/${ro}`, { method: "POST", headers: JSON_TYPE, body: "{}" })).status).toBe(403);
    const r = await fetch(`${open.url}/v1/server/broadcast`, {
      method: "POST",
      headers: JSON_TYPE,
      body: JSON.stringify({ channels: [ro, free], data: { hi: 1 } }),
    });
    expect(r.status).toBe(200);
    const { results } = (await r.json()) as { results: Record<string, unknown>[] };
    expect(results[0]).toMatchObject({ channel: ro, error: "feature_disabled", temporary: false });
    expect(results[1]).toMatchObject({ channel: free, seq: expect.any(Number) });
    expect(await history(open, ro)).toEqual([]);
    expect(await history(open, free)).toEqual([{ hi: 1 }]);
  });

  it("an admin key may override a namespace's publish switch, on both the broadcast and the publish door", async () => {
    const ro = uniq("ro.k");
    const admin = { "x-api-key": ADMIN_KEY, ...JSON_TYPE };
    const r = await fetch(`${keyed.metricsUrl}/v1/server/broadcast`, { method: "POST", headers: admin, body: JSON.stringify({ channels: [ro], data: 1 }) });
    expect(((await r.json()) as { results: Record<string, unknown>[] }).results[0]).toMatchObject({ channel: ro, seq: expect.any(Number) });
    expect((await fetch(`${keyed.url}/v1/publish/${ro}`, { method: "POST", headers: admin, body: "2" })).status).toBe(201);
    expect(await history(keyed, ro, { "x-api-key": ADMIN_KEY })).toEqual([1, 2]);
  });
});

describe("safe defaults — API key scopes", () => {
  const control = (key: string) => fetch(`${keyed.metricsUrl}/v1/server/occupancy?channel=a`, { headers: { "x-api-key": key } });
  const publish = (key: string, ch: string) =>
    fetch(`${keyed.url}/v1/publish/${ch}`, { method: "POST", headers: { "x-api-key": key, ...JSON_TYPE }, body: "{}" });
  const read = (key: string, ch: string) => fetch(`${keyed.url}/v1/channels/${ch}/messages`, { headers: { "x-api-key": key } });

  it("a publish key publishes only, a read key reads only; the control plane takes the admin key alone", async () => {
    const ch = uniq("scoped.a");
    expect([(await publish(PUBLISH_KEY, ch)).status, (await read(PUBLISH_KEY, ch)).status, (await control(PUBLISH_KEY)).status]).toEqual([201, 403, 403]);
    expect([(await publish(READ_KEY, ch)).status, (await read(READ_KEY, ch)).status, (await control(READ_KEY)).status]).toEqual([403, 200, 403]);
    expect([(await publish(ADMIN_KEY, ch)).status, (await read(ADMIN_KEY, ch)).status, (await control(ADMIN_KEY)).status]).toEqual([201, 200, 200]);
    const refused = await body(await control(PUBLISH_KEY));
    expect(refused).toMatchObject({ error: "forbidden", message: expect.stringMatching(/admin scope/) });
  });

  it("the start warns that every key of API_KEYS is an admin key", () => {
    expect(warnings(keyed).find((m) => m.startsWith("API_KEYS"))).toMatch(/1 key\(s\) is an admin key .*API_KEYS_FILE/);
    expect(warnings(keyed).some((m) => m.startsWith("AUTHENTICATION IS OFF"))).toBe(false);
  });
});

describe("safe defaults — npm start's gateway", () => {
  it("listens on loopback only while authentication is off, and says so", async () => {
    expect(plain.logs.find((l) => l.msg === "gateway ready")).toMatchObject({ host: "127.0.0.1" });
    expect(warnings(plain).find((m) => m.startsWith("AUTHENTICATION IS OFF"))).toMatch(/this host only \(HOST=127\.0\.0\.1\)/);
    if (external) await expect(fetch(`http://${external}:${plain.port}/healthz`)).rejects.toThrow();
  });

  it("its embedded nats-server takes only the gateway's token, which is on no command line; the gateway still serves", async () => {
    const ready = plain.logs.find((l) => l.msg === "embedded nats-server ready")!;
    await expect(natsConnect({ servers: ready.url as string, reconnect: false })).rejects.toThrow(/authorization/i);
    const cmdline = readFileSync(`/proc/${ready.natsPid as number}/cmdline`, "utf8").split("\0");
    expect(cmdline.some((a) => /^--?(auth|token|user|pass)/.test(a))).toBe(false);
    const c = await TestClient.connect(plain.wsUrl);
    clients.push(c);
    const ch = uniq("plain.x");
    await c.sub(ch);
    expect((await fetch(`${plain.url}/v1/publish/${ch}`, { method: "POST", headers: JSON_TYPE, body: '{"ok":true}' })).status).toBe(201);
    await c.waitForMsgs(1);
  });
});
