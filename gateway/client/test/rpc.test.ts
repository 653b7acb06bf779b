import { describe, expect, it } from "vitest";
import { EVENT_TYPES, GatewayClient, type GatewayEvent } from "../src/index.js";
import { fakeWebSocket } from "./fake-socket.js";

// `rpc` against an in-process fake socket: the test plays the server's answers and drops.
async function connected() {
  const fake = fakeWebSocket();
  const client = new GatewayClient("http://gw.test/ws", { WebSocket: fake.WebSocket, minDelayMs: 10_000, maxDelayMs: 10_000, pingIntervalMs: 0 });
  const events: GatewayEvent[] = [];
  for (const t of EVENT_TYPES) client.on(t, (e) => void events.push(e));
  const open = client.connect();
  fake.last().open();
  await open;
  return { ...fake, client, events };
}

describe("client — rpc", () => {
  it("client — rpc sends method and data and resolves with the answer's data, matched by id", async () => {
    const { client, last } = await connected();
    const a = client.rpc<{ name: string }>("user.get", { id: 7 });
    const b = client.rpc("user.count");
    const [fa, fb] = last().frames("rpc");
    expect(fa).toEqual({ op: "rpc", id: expect.any(Number), method: "user.get", data: { id: 7 } });
    expect(fb).toMatchObject({ method: "user.count", data: null });
    last().ok(fb, { data: 3 });
    last().ok(fa, { data: { name: "ann" } });
    expect(await a).toEqual({ name: "ann" });
    expect(await b).toBe(3);
    await client.close();
  });

  it("client — an err answer rejects with its code, temporary and the backend's appCode", async () => {
    const { client, last } = await connected();
    const p = client.rpc("user.get");
    const [f] = last().frames("rpc");
    last().deliver({ op: "err", id: f!.id, code: "rpc_error", message: "no such user", temporary: false, appCode: "not_found" });
    await expect(p).rejects.toMatchObject({ code: "rpc_error", message: "no such user", temporary: false, appCode: "not_found" });
    const q = client.rpc("user.get");
    last().deliver({ op: "err", id: last().frames("rpc")[1]!.id, code: "hook_unavailable", message: "down", temporary: true });
    const e = await q.catch((x: unknown) => x);
    expect(e).toMatchObject({ code: "hook_unavailable", temporary: true });
    expect(e).not.toHaveProperty("appCode");
    await client.close();
  });

  it("client — a call in flight when the socket drops fails with connection_lost (temporary) and is not re-sent", async () => {
    const { client, last, sockets } = await connected();
    const p = client.rpc("orders.place", { n: 1 });
    last().drop(1006);
    await expect(p).rejects.toMatchObject({ code: "connection_lost", temporary: true });
    // while disconnected a call fails at once: nothing is queued
    await expect(client.rpc("orders.place")).rejects.toMatchObject({ code: "not_connected", temporary: true });
    expect(sockets).toHaveLength(1);
    await client.close();
  });

  it("client — close() fails a call in flight with closed; later calls too", async () => {
    const { client } = await connected();
    const p = client.rpc("slow.thing");
    await client.close();
    await expect(p).rejects.toMatchObject({ code: "closed" });
    await expect(client.rpc("slow.thing")).rejects.toMatchObject({ code: "closed" });
  });
});
