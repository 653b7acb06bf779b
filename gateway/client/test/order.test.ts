import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";
import { afterAll, describe, expect, it } from "vitest";
import { GatewayClient, type GatewayEvent } from "../src/index.js";
import { waitFor } from "#testkit/wait.js";

// A real WebSocket server playing the gateway's part with scripted frames: per-channel order on a wildcard
// subscription (a message repaired late follows newer ones of other channels), repeats, and a resume
// answered with epochChanged.
const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
const subs: Record<string, unknown>[] = [];
let script: (ws: WebSocket, sub: Record<string, unknown>) => void = () => undefined;
wss.on("connection", (ws) => {
  ws.on("message", (d) => {
    const f = JSON.parse(String(d)) as Record<string, unknown>;
    if (f.op !== "sub") return;
    subs.push(f);
    script(ws, f);
  });
});
afterAll(() => new Promise<void>((r) => wss.close(() => r())));

const msg = (channel: string, seq: number) => JSON.stringify({ op: "msg", channel, sub: "w.*", seq, ts: 1, data: { seq } });

describe("client — order and duplicates per channel", () => {
  it("client — a late-repaired message of one channel is delivered after newer ones of another; repeats are dropped per channel; a recreated stream starts over", async () => {
    const { port } = wss.address() as AddressInfo;
    script = (ws, f) => {
      if (subs.length === 1) {
        ws.send(JSON.stringify({ op: "ok", id: f.id, epoch: "E1" }));
        for (const [ch, seq] of [
          ["w.a", 5],
          ["w.b", 7],
          ["w.a", 6],
          ["w.b", 7],
          ["w.a", 5],
          ["w.b", 8],
        ] as const)
          ws.send(msg(ch, seq));
      } else {
        ws.send(JSON.stringify({ op: "ok", id: f.id, epoch: "E2", truncated: true, epochChanged: true, firstSeq: 1, lastSeq: 2 }));
        ws.send(msg("w.a", 1));
        ws.send(msg("w.b", 2));
      }
    };
    const c = new GatewayClient(`ws://127.0.0.1:${port}/ws`, { WebSocket: WebSocket as never, minDelayMs: 10, maxDelayMs: 20 });
    const events: GatewayEvent[] = [];
    c.on("gap", (e) => events.push(e));
    await c.connect();
    const got: string[] = [];
    c.subscribe("w.*", (m) => void got.push(`${m.channel}:${m.seq}`));
    await waitFor(() => got.length >= 4 || undefined, { what: "4 messages" });
    expect(got).toEqual(["w.a:5", "w.b:7", "w.a:6", "w.b:8"]);
    expect(c.stats.duplicatesDropped).toBe(2);
    // Reconnect: the resume names the last seq and its epoch; the server says the stream was recreated.
    for (const s of wss.clients) s.terminate();
    await waitFor(() => got.length >= 6 || undefined, { what: "messages of the new stream" });
    expect(subs[1]).toMatchObject({ from: { seq: 9, epoch: "E1" } });
    expect(got.slice(4)).toEqual(["w.a:1", "w.b:2"]);
    expect(events).toEqual([{ type: "gap", channel: "w.*", expectedSeq: 9, firstSeq: 1, epochChanged: true }]);
    await c.close();
  });
});
