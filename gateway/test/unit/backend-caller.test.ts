import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import client from "prom-client";
import { BackendCaller } from "../../src/backend/caller.js";
import { backendMetrics } from "../../src/backend/metrics.js";
import { signatureHeader, verifySignature } from "../../src/backend/signature.js";
import { createLogger } from "../../src/log.js";
import { streamAnswer, type StreamEnd } from "#testkit/hook-backend.js";
import { waitFor } from "#testkit/wait.js";

const log = createLogger("fatal", {});
let server: Server;
let url = "";
let open = 0;
let mostOpen = 0;
const seen: { headers: Record<string, unknown>; body: string }[] = [];
/** The most a streaming answer writes before giving up: far more than any cap, so that only a cut ends it early. */
const HUGE = 256 * 1024 * 1024;
/** How each streaming answer ended: bytes written when its connection closed, and whether it wrote them all. */
const streamed: StreamEnd[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => (body += d.toString()));
    req.on("end", () => {
      seen.push({ headers: req.headers, body });
      open++;
      mostOpen = Math.max(mostOpen, open);
      const path = req.url ?? "/";
      if (path === "/endless" || path === "/declared") return streamAnswer(res, HUGE, path === "/declared", (e) => streamed.push(e));
      const done = () => {
        open--;
        if (path === "/redirect") res.writeHead(302, { location: "/ok" }).end();
        else res.writeHead(path === "/fail" ? 500 : 200, { "content-type": "application/json" }).end('{"allow":true}');
      };
      if (path === "/slow") setTimeout(done, 50);
      else if (path === "/hang") req.socket.once("close", () => open--);
      else done();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const callerWith = (o: { timeoutMs?: number; maxInFlight?: number; secrets?: string[]; maxAnswerBytes?: number }) => {
  const registry = new client.Registry();
  const metrics = backendMetrics(registry);
  return { caller: new BackendCaller({ timeoutMs: 1_000, maxInFlight: 8, maxAnswerBytes: 1024, ...o }, log, metrics), registry };
};

describe("backend caller — one way to call the application", () => {
  it("backend caller — answers of every status come back; a redirect is not followed; counted per hook and result", async () => {
    const { caller, registry } = callerWith({});
    expect(await caller.post("connect", `${url}/ok`, "{}")).toMatchObject({ status: 200, ok: true, text: '{"allow":true}' });
    expect(await caller.post("connect", `${url}/fail`, "{}")).toMatchObject({ status: 500, ok: false });
    expect(await caller.post("subscribe", `${url}/redirect`, "{}")).toMatchObject({ status: 0, failed: "unreachable" });
    const text = await registry.metrics();
    expect(text).toContain('fanout_backend_calls_total{hook="connect",result="ok"} 1');
    expect(text).toContain('fanout_backend_calls_total{hook="connect",result="status"} 1');
    expect(text).toContain('fanout_backend_calls_total{hook="subscribe",result="unreachable"} 1');
  });

  it("backend caller — no answer within the deadline is a timeout", async () => {
    const { caller } = callerWith({ timeoutMs: 100 });
    expect(await caller.post("connect", `${url}/hang`, "{}")).toMatchObject({ failed: "timeout", why: "did not answer within 100 ms" });
  });

  it("backend caller — at most maxInFlight calls are open at once; the others wait and all are answered", async () => {
    const { caller } = callerWith({ maxInFlight: 2 });
    mostOpen = 0;
    const all = await Promise.all(Array.from({ length: 6 }, () => caller.post("connect", `${url}/slow`, "{}")));
    expect(all.every((r) => r.ok)).toBe(true);
    expect(mostOpen).toBe(2);
  });

  it("backend caller — a signed request verifies with the secret, over the exact bytes sent; a rotated pair both verify", async () => {
    const { caller } = callerWith({ secrets: ["new-secret", "old-secret"] });
    seen.length = 0;
    await caller.post("webhook", `${url}/ok`, '{"events":[]}');
    const [req] = seen;
    const header = String(req!.headers["fanout-signature"]);
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifySignature(header, "new-secret", req!.body)).toBe(true);
    expect(verifySignature(header, "old-secret", req!.body)).toBe(true);
    expect(verifySignature(header, "other", req!.body)).toBe(false);
    expect(verifySignature(header, "new-secret", req!.body + " ")).toBe(false);
  });

  it("backend caller — an endless answer fails too_large at the cap, and its connection is closed long before the end", async () => {
    const { caller, registry } = callerWith({ maxAnswerBytes: 64 * 1024, timeoutMs: 10_000 });
    const before = streamed.length;
    const r = await caller.post("rpc", `${url}/endless`, "{}");
    expect(r).toMatchObject({ status: 200, ok: false, failed: "too_large", why: "answered more than 65536 bytes" });
    const end = await waitFor(() => streamed[before], { what: "the answer's connection to close" });
    // What was written before the close is the cap plus what the sockets' buffers held, not the body.
    expect(end.finished).toBe(false);
    expect(end.written).toBeLessThan(HUGE / 4);
    expect(await registry.metrics()).toContain('fanout_backend_calls_total{hook="rpc",result="too_large"} 1');
  });

  it("backend caller — an answer whose Content-Length passes the cap fails without a byte of its body read", async () => {
    const { caller } = callerWith({ maxAnswerBytes: 64 * 1024, timeoutMs: 10_000 });
    const before = streamed.length;
    expect(await caller.post("rpc", `${url}/declared`, "{}")).toMatchObject({ status: 200, failed: "too_large" });
    expect(await waitFor(() => streamed[before], { what: "the answer's connection to close" })).toEqual({ written: 0, finished: false });
  });

  it("backend caller — an answer of exactly the cap is read whole; maxAnswerBytes 0 drops any body and keeps the status", async () => {
    const exact = callerWith({ maxAnswerBytes: '{"allow":true}'.length }).caller;
    expect(await exact.post("connect", `${url}/ok`, "{}")).toMatchObject({ ok: true, text: '{"allow":true}' });
    const under = callerWith({ maxAnswerBytes: '{"allow":true}'.length - 1 }).caller;
    expect(await under.post("connect", `${url}/ok`, "{}")).toMatchObject({ failed: "too_large" });
    const statusOnly = callerWith({ maxAnswerBytes: 0, timeoutMs: 10_000 }).caller;
    const before = streamed.length;
    expect(await statusOnly.post("webhook", `${url}/endless`, "{}")).toEqual({ status: 200, ok: true, text: "" });
    expect((await waitFor(() => streamed[before], { what: "the answer's connection to close" })).finished).toBe(false);
  });

  it("backend caller — a signature older than the tolerance is refused (a replayed request)", () => {
    const h = signatureHeader(["s"], 1_000, "{}");
    expect(verifySignature(h, "s", "{}", 300, 1_200)).toBe(true);
    expect(verifySignature(h, "s", "{}", 300, 1_400)).toBe(false);
  });
});
