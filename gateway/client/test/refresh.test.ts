import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";
import { afterAll, describe, expect, it } from "vitest";
import { GatewayClient } from "../src/index.js";
import { waitFor } from "#testkit/wait.js";

// A real WebSocket server that never answers `refresh`: it closes the connection instead (as a dying
// worker would), so the reply the SDK waits for never comes.
const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
const seen: string[] = [];
wss.on("connection", (ws, req) => {
  seen.push(req.url ?? "");
  ws.on("message", (d) => {
    if (JSON.parse(String(d)).op === "refresh") ws.close(1011, "going away without an answer");
  });
});
afterAll(() => new Promise<void>((r) => wss.close(() => r())));

describe("client — refreshToken", () => {
  it("client — refreshToken settles when the connection closes before the reply, and the next connection presents the new token", async () => {
    const { port } = wss.address() as AddressInfo;
    const c = new GatewayClient(`ws://127.0.0.1:${port}/ws`, {
      WebSocket: WebSocket as never,
      token: "old",
      tokenVia: "query",
      minDelayMs: 10,
      maxDelayMs: 20,
    });
    await c.connect();
    await expect(c.refreshToken("new")).resolves.toEqual({});
    await waitFor(() => seen.length >= 2 || undefined, { what: "a reconnect" });
    expect(seen[0]).toContain("token=old");
    expect(seen[1]).toContain("token=new");
    await c.close();
  });
});
