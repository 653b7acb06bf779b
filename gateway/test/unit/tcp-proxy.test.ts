// The test kit's TCP proxy (gateway/testkit/tcp-proxy.ts) in each of its modes, in front of a loopback
// echo server: what passes, what is held, what is dropped.
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startTcpProxy, type TcpProxy } from "#testkit/tcp-proxy.js";
import { waitFor } from "#testkit/wait.js";

let echo: Server;
let received: string;
let proxy: TcpProxy;
const open: Socket[] = [];

beforeEach(async () => {
  received = "";
  echo = createServer((s) => {
    s.on("data", (b: Buffer) => {
      received += b.toString();
      s.write(b);
    });
    s.on("error", () => undefined);
  });
  await new Promise<void>((r) => echo.listen(0, "127.0.0.1", r));
  proxy = await startTcpProxy({ host: "127.0.0.1", port: (echo.address() as { port: number }).port });
});

afterEach(async () => {
  for (const s of open) s.destroy();
  open.length = 0;
  await proxy.close();
  await new Promise<void>((r) => echo.close(() => r()));
});

/** A client through the proxy: what it has read, and whether it was closed. */
async function client(): Promise<{ s: Socket; got: () => string; closed: () => boolean }> {
  const s = createConnection({ host: "127.0.0.1", port: proxy.port });
  open.push(s);
  let got = "";
  let closed = false;
  s.on("data", (b: Buffer) => (got += b.toString()));
  s.on("error", () => undefined);
  s.on("close", () => (closed = true));
  await new Promise<void>((r, j) => s.once("connect", r).once("error", j));
  return { s, got: () => got, closed: () => closed };
}

describe("tcp proxy — modes", () => {
  it("tcp proxy — passes bytes both ways in order, and counts its connections", async () => {
    const c = await client();
    for (const part of ["a", "b", "c"]) c.s.write(part);
    await waitFor(() => c.got() === "abc" || undefined, { what: "the echo through the proxy" });
    expect(proxy.connections()).toBe(1);
    expect(proxy.url).toBe(`nats://127.0.0.1:${proxy.port}`);
  });

  it("tcp proxy — cut drops every open connection and says how many; a new one passes", async () => {
    const [a, b] = [await client(), await client()];
    await waitFor(() => proxy.connections() === 2 || undefined, { what: "two connections" });
    expect(proxy.cut()).toBe(2);
    await waitFor(() => (a.closed() && b.closed()) || undefined, { what: "both clients closed" });
    expect(proxy.connections()).toBe(0);
    const c = await client();
    c.s.write("again");
    await waitFor(() => c.got() === "again" || undefined, { what: "the echo after the cut" });
  });

  it("tcp proxy — refuse drops the open connections and every new one until set back", async () => {
    const a = await client();
    proxy.refuse(true);
    await waitFor(() => a.closed() || undefined, { what: "the open client closed" });
    const b = await client();
    await waitFor(() => b.closed() || undefined, { what: "a new client closed at once" });
    expect(proxy.connections()).toBe(0);
    proxy.refuse(false);
    const c = await client();
    c.s.write("back");
    await waitFor(() => c.got() === "back" || undefined, { what: "the echo once accepting again" });
  });

  it("tcp proxy — stall holds every byte of the open connections, in order, and sends them when it ends; they stay open, new ones pass", async () => {
    const c = await client();
    await waitFor(() => proxy.connections() === 1 || undefined, { what: "the connection" });
    expect(proxy.stall()).toBe(1);
    c.s.write("held-");
    c.s.write("in-order");
    await waitFor(() => proxy.held() === "held-in-order".length || undefined, { what: "the bytes held in the proxy" });
    expect(received).toBe("");
    const fresh = await client();
    fresh.s.write("new;");
    await waitFor(() => fresh.got() === "new;" || undefined, { what: "a new connection's echo during the stall" });
    expect(proxy.stall(false)).toBe(2);
    await waitFor(() => c.got() === "held-in-order" || undefined, { what: "the held bytes echoed" });
    expect([proxy.held(), c.closed(), proxy.connections()]).toEqual([0, false, 2]);
  });

  it("tcp proxy — down refuses connections and cuts the open ones; up listens again on the same port", async () => {
    const a = await client();
    await proxy.down();
    await waitFor(() => a.closed() || undefined, { what: "the open client closed" });
    await expect(client()).rejects.toMatchObject({ code: "ECONNREFUSED" });
    await proxy.up();
    const c = await client();
    c.s.write("up");
    await waitFor(() => c.got() === "up" || undefined, { what: "the echo once listening again" });
  });

  it("tcp proxy — delay holds each chunk that long each way: a round trip takes at least twice the delay", async () => {
    const c = await client();
    proxy.delay(40);
    const t0 = performance.now();
    c.s.write("slow");
    await waitFor(() => c.got() === "slow" || undefined, { what: "the delayed echo" });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(78);
    proxy.delay(0);
    c.s.write("+fast");
    await waitFor(() => c.got() === "slow+fast" || undefined, { what: "the echo with the delay off" });
    expect(proxy.held()).toBe(0);
  });

  it("tcp proxy — refuseFrom drops one peer's connections, open and new, before its bytes pass; the others go on", async () => {
    await proxy.close();
    // The peer is named by the first bytes its client sends (a NATS gateway's CONNECT names its region).
    proxy = await startTcpProxy(
      { host: "127.0.0.1", port: (echo.address() as { port: number }).port },
      { peerOf: (b) => /^from (\w+)/.exec(b.toString())?.[1] },
    );
    const [x, y] = [await client(), await client()];
    x.s.write("from x;");
    y.s.write("from y;");
    await waitFor(() => (x.got() === "from x;" && y.got() === "from y;") || undefined, { what: "both echoed" });
    proxy.refuseFrom("x", true);
    await waitFor(() => x.closed() || undefined, { what: "x's connection dropped" });
    y.s.write("more");
    await waitFor(() => y.got() === "from y;more" || undefined, { what: "y still echoed" });
    const again = await client();
    again.s.write("from x again");
    await waitFor(() => again.closed() || undefined, { what: "x's new connection dropped" });
    expect(received).not.toContain("from x again");
    proxy.refuseFrom("x", false);
    const back = await client();
    back.s.write("from x back");
    await waitFor(() => back.got() === "from x back" || undefined, { what: "x passes again" });
  });
});
