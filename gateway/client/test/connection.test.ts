import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { EVENT_TYPES, GatewayClient, type GatewayEvent } from "../src/index.js";
import { fakeWebSocket, flush } from "./fake-socket.js";

// The connection's end of life against a fake socket and a fake fetch: sockets that report `error` without
// `close` (Node 22's built-in WebSocket), and refused upgrades asked about with fetch.
beforeEach(() => void vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] }));
afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

type Answer = { status: number; body?: unknown } | "network error";
/** A fetch that answers each call with the next of `answers` (the last one again when they run out). */
function fakeFetch(...answers: Answer[]) {
  const calls: { url: string; headers?: Record<string, string> }[] = [];
  vi.stubGlobal("fetch", async (url: string, init?: { headers?: Record<string, string> }) => {
    calls.push({ url, ...(init?.headers ? { headers: init.headers } : {}) });
    const a = answers[Math.min(calls.length - 1, answers.length - 1)]!;
    if (a === "network error") throw new TypeError("fetch failed");
    return { status: a.status, json: async () => a.body };
  });
  return calls;
}

const unauthorized = { status: 401, body: { error: "unauthorized", message: "token rejected: expired", temporary: false } };

function setup(options: ConstructorParameters<typeof GatewayClient>[1] = {}) {
  const fake = fakeWebSocket();
  const client = new GatewayClient("http://gw.test/ws", { WebSocket: fake.WebSocket, minDelayMs: 100, maxDelayMs: 1_000, ...options });
  const events: GatewayEvent[] = [];
  for (const t of EVENT_TYPES) client.on(t, (e) => void events.push(e));
  return { ...fake, client, events };
}
const ofType = (events: GatewayEvent[], type: GatewayEvent["type"]) => events.filter((e) => e.type === type);

describe("connection — a socket that reports error without close", () => {
  it("connection — an error alone (a refused connection on Node 22's WebSocket) counts as a close: one disconnected, one reconnect", async () => {
    vi.stubGlobal("fetch", undefined);
    const { client, last, sockets, events } = setup();
    void client.connect();
    last().fail();
    expect(ofType(events, "disconnected")).toHaveLength(0); // not before the task in which a close would come
    await vi.advanceTimersByTimeAsync(0);
    expect(ofType(events, "disconnected")).toEqual([{ type: "disconnected", code: 1006, reason: "", willReconnect: true, reconnectInMs: expect.any(Number) }]);
    sockets[0]!.drop(1006); // a close that comes after all is not handled twice
    await vi.advanceTimersByTimeAsync(1_000);
    expect(sockets).toHaveLength(2);
    expect(ofType(events, "disconnected")).toHaveLength(1);
    expect(ofType(events, "connecting")).toEqual([
      { type: "connecting", attempt: 0 },
      { type: "connecting", attempt: 1 },
    ]);
    last().open();
    await expect(client.connect()).resolves.toBeUndefined();
  });

  it("connection — an error followed by a close (browsers, ws) is handled once", async () => {
    vi.stubGlobal("fetch", undefined);
    const { client, last, sockets, events } = setup();
    void client.connect();
    last().onerror?.({});
    last().drop(1006);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(ofType(events, "disconnected")).toHaveLength(1);
    expect(sockets).toHaveLength(2);
  });

  it("connection — an open socket's error waits for its close; without one it counts as closed after a grace period", async () => {
    vi.stubGlobal("fetch", undefined);
    const { client, last, events } = setup({ minDelayMs: 10_000, maxDelayMs: 10_000 });
    void client.connect();
    const ws = last();
    ws.open();
    ws.reportsClose = false;
    ws.onerror?.({});
    await vi.advanceTimersByTimeAsync(999);
    expect(ofType(events, "disconnected")).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(ofType(events, "disconnected")).toEqual([expect.objectContaining({ code: 1006, willReconnect: true })]);
  });

  it("connection — close() resolves when the connecting socket never reports its close", async () => {
    vi.stubGlobal("fetch", undefined);
    const { client, last, events } = setup();
    void client.connect().catch(() => undefined);
    last().reportsClose = false;
    const closed = client.close();
    await vi.advanceTimersByTimeAsync(0);
    await expect(closed).resolves.toBeUndefined();
    expect(events.at(-1)).toEqual({ type: "disconnected", code: 1000, reason: "client closed", willReconnect: false });
  });

  it("connection — a connect timeout on a socket that never reports its close retries", async () => {
    vi.stubGlobal("fetch", undefined);
    const { client, last, sockets, events } = setup({ connectTimeoutMs: 500 });
    void client.connect();
    last().reportsClose = false;
    await vi.advanceTimersByTimeAsync(501); // a 0 ms timer set by a fake timer's callback runs 1 ms later
    expect(last().closedWith).toBeDefined();
    expect(ofType(events, "disconnected")).toEqual([expect.objectContaining({ code: 1006, reason: "connect timeout", willReconnect: true })]);
    await vi.advanceTimersByTimeAsync(100);
    expect(sockets).toHaveLength(2);
  });
});

describe("connection — a refused upgrade is asked about with fetch", () => {
  it("connection — a permanent refusal: fetched at the same URL with the token as bearer, an error event, stopped, connect() rejects with the code", async () => {
    const calls = fakeFetch(unauthorized);
    const { client, last, sockets, events } = setup({ token: "t0k" });
    const connecting = client.connect();
    connecting.catch(() => undefined);
    last().fail();
    await vi.advanceTimersByTimeAsync(0);
    await flush();
    expect(calls).toEqual([{ url: "http://gw.test/ws?coalesce=1", headers: { authorization: "Bearer t0k" } }]);
    await expect(connecting).rejects.toMatchObject({ name: "GatewayError", code: "unauthorized", temporary: false, message: "token rejected: expired" });
    expect(ofType(events, "error")).toEqual([{ type: "error", error: expect.objectContaining({ code: "unauthorized" }) }]);
    expect(events.at(-1)).toEqual({ type: "disconnected", code: 1006, reason: "", willReconnect: false });
    expect(client.connected).toBe(false);
    await expect(client.publish("a", 1)).rejects.toMatchObject({ code: "unauthorized" });
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sockets).toHaveLength(1);
    await expect(client.close()).resolves.toBeUndefined();
  });

  it("connection — with tokenVia query the token is in the fetched URL, not in a header", async () => {
    const calls = fakeFetch(unauthorized);
    const { client, last } = setup({ token: "t0k", tokenVia: "query" });
    const connecting = client.connect();
    connecting.catch(() => undefined);
    last().drop(1006);
    await expect(connecting).rejects.toMatchObject({ code: "unauthorized" });
    expect(calls).toEqual([{ url: "http://gw.test/ws?coalesce=1&token=t0k" }]);
  });

  it("connection — unauthorized with getToken: one more attempt with a fresh token; refused again, it stops", async () => {
    fakeFetch(unauthorized);
    let n = 0;
    const { client, last, sockets, events } = setup({ getToken: () => `token-${++n}` });
    const connecting = client.connect();
    connecting.catch(() => undefined);
    await flush();
    last().fail();
    await vi.advanceTimersByTimeAsync(0);
    await flush();
    await vi.advanceTimersByTimeAsync(100);
    await flush();
    expect(sockets).toHaveLength(2);
    expect(sockets[1]!.protocols).toEqual(["fanout.v1", "bearer.token-2"]);
    last().fail();
    await vi.advanceTimersByTimeAsync(0);
    await expect(connecting).rejects.toMatchObject({ code: "unauthorized" });
    expect(ofType(events, "error")).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(sockets).toHaveLength(2);
  });

  it("connection — the fresh-token attempt is granted again after an open", async () => {
    fakeFetch(unauthorized);
    let n = 0;
    const { client, last, sockets } = setup({ getToken: () => `token-${++n}` });
    void client.connect();
    await flush();
    last().drop(1006);
    await vi.advanceTimersByTimeAsync(100);
    await flush();
    last().open(); // the fresh token worked
    last().drop(1001);
    await vi.advanceTimersByTimeAsync(1_000);
    await flush();
    last().drop(1006); // refused (revoked, say): one more fresh token
    await vi.advanceTimersByTimeAsync(1_000);
    await flush();
    expect(sockets).toHaveLength(4);
    expect(client.connected).toBe(false);
  });

  it("connection — a temporary refusal is reported and retried", async () => {
    fakeFetch({ status: 503, body: { error: "shutting_down", message: "server is shutting down", temporary: true } });
    const { client, last, sockets, events } = setup();
    void client.connect();
    last().fail();
    await vi.advanceTimersByTimeAsync(0);
    await flush();
    expect(ofType(events, "error")).toEqual([{ type: "error", error: expect.objectContaining({ code: "shutting_down", temporary: true }) }]);
    expect(ofType(events, "disconnected")).toEqual([expect.objectContaining({ willReconnect: true })]);
    await vi.advanceTimersByTimeAsync(100);
    expect(sockets).toHaveLength(2);
  });

  it.each([
    ["no answer (the gateway is down)", "network error" as const],
    ["426 (the upgrade would be let in)", { status: 426, body: { error: "bad_request", message: "upgrade", temporary: false } }],
    ["not_found (a gateway without the answer)", { status: 404, body: { error: "not_found", message: "no route", temporary: false } }],
    ["a body that is not JSON", { status: 502, body: undefined }],
  ])("connection — %s: no error event, retried with backoff", async (_what, answer) => {
    fakeFetch(answer);
    const { client, last, sockets, events } = setup();
    void client.connect();
    last().fail();
    await vi.advanceTimersByTimeAsync(0);
    await flush();
    await vi.advanceTimersByTimeAsync(100);
    expect(sockets).toHaveLength(2);
    expect(ofType(events, "error")).toHaveLength(0);
  });

  it("connection — close() while asking: nothing happens after the answer", async () => {
    let answer!: (a: { status: number; json(): Promise<unknown> }) => void;
    vi.stubGlobal("fetch", () => new Promise((r) => (answer = r)));
    const { client, last, sockets, events } = setup();
    void client.connect().catch(() => undefined);
    last().fail();
    await vi.advanceTimersByTimeAsync(0);
    await client.close();
    answer({ status: 401, json: async () => unauthorized.body });
    await flush();
    await vi.advanceTimersByTimeAsync(60_000);
    expect(ofType(events, "error")).toHaveLength(0);
    expect(sockets).toHaveLength(1);
  });

  it("connection — an answer that never comes is given up after connectTimeoutMs and the attempt retried", async () => {
    vi.stubGlobal(
      "fetch",
      (_url: string, init: { signal: AbortSignal }) => new Promise((_r, reject) => init.signal.addEventListener("abort", () => reject(new Error("aborted")))),
    );
    const { client, last, sockets } = setup({ connectTimeoutMs: 2_000 });
    void client.connect();
    last().fail();
    await vi.advanceTimersByTimeAsync(1_999);
    expect(sockets).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1 + 100);
    expect(sockets).toHaveLength(2);
  });
});
