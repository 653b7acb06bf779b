import { execFileSync } from "node:child_process";
import { request as httpRequest } from "node:http";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { ClientPool } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { connect, refusal, tryConnect } from "#testkit/auth.js";

// Each test connects from its own loopback address (127.0.0.x): per-IP limits are then independent.
let nats: NatsServerHandle;
let gw: GatewayHandle;
let dir: string;
let cert: string;
const clients = new ClientPool();
const at = (ip: string, headers?: Record<string, string>) => ({ localAddress: ip, headers });
const open = async (ip: string, headers?: Record<string, string>) => clients.track(await connect(gw.wsUrl, at(ip, headers)));
const closeAll = async (cs: TestClient[]) => {
  for (const c of cs) c.close();
  await Promise.all(cs.map((c) => c.waitClosed()));
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fgw-tls-"));
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=localhost",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ],
    { stdio: "ignore" },
  );
  cert = readFileSync(join(dir, "cert.pem"), "utf8");
  nats = await startNatsServer();
  gw = await startGateway({
    natsUrl: nats.url,
    workers: 1,
    logLevel: "info",
    args: [
      "--allowed-origins",
      "https://app.example.com,https://*.example.org",
      "--max-connections",
      "8",
      "--max-connections-per-ip",
      "3",
      "--connect-rate-per-ip",
      "5",
      "--connect-burst-per-ip",
      "5",
      "--frame-rate",
      "20",
      "--frame-burst",
      "20",
      "--frame-rate-window",
      "1s",
      "--publish-rate",
      "5",
      "--publish-burst",
      "20",
      "--max-subscriptions",
      "3",
      "--max-payload-bytes",
      "1KiB",
      "--tls-cert-file",
      join(dir, "cert.pem"),
      "--tls-key-file",
      join(dir, "key.pem"),
      "--tls-port",
      "0",
    ],
  });
});
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await nats?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("limits — admission", () => {
  it("auth off: startup warns loudly, once, from the primary", () => {
    const warnings = gw.logs.filter((l) => /AUTHENTICATION IS OFF/.test(String(l.msg)));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.role).toBe("primary");
  });

  it("origin allowlist: others get 403; listed ones, subdomains of *.domain, and non-browsers (no Origin) pass", async () => {
    const r = await refusal(gw.wsUrl, at("127.0.0.10", { origin: "https://evil.example.com" }));
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error).toBe("forbidden");
    expect((await refusal(gw.wsUrl, at("127.0.0.10", { origin: "https://example.org" }))).status).toBe(403);
    await closeAll([
      await open("127.0.0.10", { origin: "https://app.example.com" }),
      await open("127.0.0.10", { origin: "https://a.example.org" }),
      await open("127.0.0.10"),
    ]);
  });

  it("connections per IP: the 4th from one address gets 429 while others connect; closing one lets it in", async () => {
    const three = [await open("127.0.0.11"), await open("127.0.0.11"), await open("127.0.0.11")];
    expect((await refusal(gw.wsUrl, at("127.0.0.11"))).status).toBe(429);
    const other = await open("127.0.0.20");
    await closeAll([three[0]!]);
    const again = await waitFor(
      async () => {
        const r = await tryConnect(gw.wsUrl, at("127.0.0.11"));
        return r instanceof TestClient ? r : undefined;
      },
      { what: "a 4th connection after a close" },
    );
    await closeAll([...three.slice(1), other, again]);
  });

  it("connections per worker: the 9th gets 503; a close makes room", async () => {
    const cs: TestClient[] = [];
    for (const ip of ["127.0.0.12", "127.0.0.12", "127.0.0.12", "127.0.0.13", "127.0.0.13", "127.0.0.13", "127.0.0.14", "127.0.0.14"]) {
      cs.push(
        await waitFor(
          async () => {
            const r = await tryConnect(gw.wsUrl, at(ip));
            return r instanceof TestClient ? r : undefined;
          },
          { what: `connection from ${ip}` },
        ),
      );
    }
    const r = await refusal(gw.wsUrl, at("127.0.0.21"));
    expect(r.status).toBe(503);
    expect(r.headers["retry-after"]).toBe("1");
    await closeAll([cs.pop()!]);
    cs.push(
      await waitFor(
        async () => {
          const x = await tryConnect(gw.wsUrl, at("127.0.0.21"));
          return x instanceof TestClient ? x : undefined;
        },
        { what: "a connection after a close" },
      ),
    );
    await closeAll(cs);
  });

  it("connection rate per IP: a burst of 5, then 429 with Retry-After, then allowed again as the bucket refills", async () => {
    for (let i = 0; i < 5; i++) await closeAll([await open("127.0.0.15")]);
    const r = await refusal(gw.wsUrl, at("127.0.0.15"));
    expect(r.status).toBe(429);
    expect(Number(r.headers["retry-after"])).toBeGreaterThanOrEqual(1);
    const t0 = Date.now();
    const c = await waitFor(
      async () => {
        const x = await tryConnect(gw.wsUrl, at("127.0.0.15"));
        return x instanceof TestClient ? x : undefined;
      },
      { timeoutMs: 3_000, intervalMs: 50, what: "a refilled token" },
    );
    expect(Date.now() - t0).toBeLessThan(1_500); // 5/s: a token every 200 ms
    await closeAll([c]);
  });
});

describe("limits — per connection", () => {
  it("frame rate: burst served, then one rate_limited err, then 4029 on a further breach within the window", async () => {
    const c = await open("127.0.0.16");
    for (let i = 0; i < 21; i++) c.sendRaw(JSON.stringify({ op: "ping", id: i }));
    await waitFor(() => c.frames.length >= 21, { what: "20 pongs and an err" });
    expect(c.frames.filter((f) => f.op === "pong")).toHaveLength(20);
    expect(c.frames.find((f) => f.op === "err")).toMatchObject({ code: "rate_limited" });
    c.sendRaw(JSON.stringify({ op: "ping" }));
    expect(await c.waitClosed()).toBe(4029);
  });

  it("frame rate: a client that slows down recovers, and after the window a breach is a warning again", async () => {
    const c = await open("127.0.0.16");
    for (let i = 0; i < 21; i++) c.sendRaw(JSON.stringify({ op: "ping", id: i }));
    await waitFor(() => c.frames.some((f) => f.op === "err"), { what: "rate_limited" });
    const warnedAt = Date.now();
    await waitFor(() => Date.now() - warnedAt > 100, { what: "a token to refill (20/s)" });
    // at the allowed pace (well under 20/s) everything is answered, through and past the 1 s window
    await waitFor(async () => (await c.request({ op: "ping" })).op === "pong" && Date.now() - warnedAt > 1_200, {
      intervalMs: 150,
      what: "the window to pass",
    });
    const lastPing = Date.now();
    await waitFor(() => Date.now() - lastPing > 100, { what: "the bucket to be full again" });
    for (let i = 0; i < 21; i++) c.sendRaw(JSON.stringify({ op: "ping", id: `b${i}` })); // a full bucket + 1
    await waitFor(() => c.frames.filter((f) => f.op === "err").length === 2, { what: "a second warning" });
    expect(c.open).toBe(true);
    c.close();
  });

  it("frame rate: a batch publish counts its items, not one frame: batches past the allowance are refused, then 4029", async () => {
    const c = await open("127.0.0.20");
    const channel = `fr.${Date.now() % 100_000}`;
    const batch = Array.from({ length: 25 }, (_, i) => ({ channel, data: i }));
    // 25 items on a burst of 20: let in, and owed; the frames after it are over the allowance
    for (let i = 0; i < 5; i++) c.sendRaw(JSON.stringify({ op: "pub", id: i, batch }));
    expect(await c.waitClosed()).toBe(4029);
    expect(c.frames.find((f) => f.op === "err")).toMatchObject({ code: "rate_limited" });
    // the first batch was let in (its ok may not have made it before the close); the other four never were
    const stored = async () => ((await (await fetch(`${gw.url}/v1/channels/${channel}/messages`)).json()) as { messages: unknown[] }).messages.length;
    await waitFor(async () => (await stored()) === 25 || undefined, { what: "the first batch stored" });
    expect(await stored()).toBe(25);
  });

  it("subscriptions per connection (MAX_SUBSCRIPTIONS): the 4th is refused; an unsub makes room", async () => {
    const c = await open("127.0.0.17");
    for (const ch of ["s.a", "s.b", "s.c"]) await c.sub(ch);
    expect(await c.request({ op: "sub", channel: "s.d" })).toMatchObject({ code: "too_many_subscriptions" });
    expect((await c.request({ op: "unsub", channel: "s.a" })).op).toBe("ok");
    expect((await c.request({ op: "sub", channel: "s.d" })).op).toBe("ok");
    c.close();
  });

  it("payload size (MAX_PAYLOAD_BYTES): a larger frame closes with 1009; the client reconnects and works", async () => {
    const c = await open("127.0.0.18");
    c.sendRaw(JSON.stringify({ op: "pub", channel: "big", data: "x".repeat(2_000) }));
    expect(await c.waitClosed()).toBe(1009);
    const d = await open("127.0.0.18");
    expect((await d.request({ op: "pub", channel: "big", data: "x".repeat(500) })).op).toBe("ok");
    d.close();
  });
});

describe("limits — HTTP publish rate per address", () => {
  /** POST from a given loopback address (per-address limits are then this test's own). */
  const postFrom = (ip: string, path: string, body: string) =>
    new Promise<{ status: number; retryAfter: string | undefined; body: Record<string, unknown> }>((resolve, reject) => {
      const req = httpRequest(`${gw.url}${path}`, { method: "POST", localAddress: ip, headers: { "content-type": "application/json" } }, (res) => {
        let raw = "";
        res.on("data", (d: Buffer) => (raw += d.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers["retry-after"], body: JSON.parse(raw) as Record<string, unknown> }));
      });
      req.on("error", reject);
      req.end(body);
    });

  it("anonymous publishes count per address in messages: a batch spends its items, then 429 with Retry-After; another address goes on", async () => {
    const channel = `pr.${Date.now() % 100_000}`;
    const batch = JSON.stringify(Array.from({ length: 15 }, (_, i) => ({ channel, data: i })));
    expect((await postFrom("127.0.0.21", "/v1/publish", batch)).status).toBe(200);
    expect((await postFrom("127.0.0.21", "/v1/publish", batch)).status).toBe(200); // 5 left: let in, 10 owed
    const refused = await postFrom("127.0.0.21", `/v1/publish/${channel}`, "1");
    expect(refused).toMatchObject({ status: 429, body: { error: "rate_limited", temporary: true, message: expect.stringContaining("from this address") } });
    expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    expect((await postFrom("127.0.0.21", "/v1/publish", batch)).status).toBe(429);
    expect((await postFrom("127.0.0.22", `/v1/publish/${channel}`, "1")).status).toBe(201);
    // as the bucket refills (5/s), the address may publish again
    await waitFor(async () => (await postFrom("127.0.0.21", `/v1/publish/${channel}`, "2")).status === 201 || undefined, {
      what: "a refilled token",
      intervalMs: 200,
    });
    const stored = (await (await fetch(`${gw.url}/v1/channels/${channel}/messages`)).json()) as { messages: unknown[] };
    expect(stored.messages).toHaveLength(32);
  });
});

describe("limits — TLS listener", () => {
  it("serves wss:// with the configured certificate, fed by the same fan-out as ws://", async () => {
    const ready = gw.logs.find((l) => l.msg === "gateway ready")!;
    const tlsPort = ready.tlsPort as number;
    expect(tlsPort).toBeGreaterThan(0);
    const c = await connect(`wss://127.0.0.1:${tlsPort}/ws`, { ca: cert, localAddress: "127.0.0.19" });
    clients.track(c);
    await c.sub("tls.feed");
    const plain = await open("127.0.0.19");
    await plain.sub("tls.feed");
    expect((await httpPublish(gw.url, "tls.feed", { v: 1 })).status).toBe(201);
    const [m] = await c.waitForMsgs(1);
    expect(m).toMatchObject({ channel: "tls.feed", data: { v: 1 } });
    await plain.waitForMsgs(1);
    await expect(connect(`wss://127.0.0.1:${tlsPort}/ws`, { localAddress: "127.0.0.19" })).rejects.toThrow(/self[- ]signed|certificate/i);
  });
});
