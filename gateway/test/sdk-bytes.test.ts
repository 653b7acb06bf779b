// The TypeScript SDK publishing bytes to a real gateway and nats-server (PROTOCOL.md "Binary payloads"), on
// both wires: single publishes and batch items arrive as bytes with their content type, on either wire.
import WebSocket from "ws";
import { decode, encode } from "@msgpack/msgpack";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GatewayClient, type GatewayMessage, type WebSocketConstructor } from "../client/src/index.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { waitFor } from "#testkit/wait.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
const open: GatewayClient[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1 });
});
afterAll(async () => {
  for (const c of open) c.close();
  await gw?.stop();
  await nats?.stop();
});

function client(msgpack: boolean): GatewayClient {
  const c = new GatewayClient(gw.wsUrl, { WebSocket: WebSocket as unknown as WebSocketConstructor, ...(msgpack ? { msgpack: { encode, decode } } : {}) });
  open.push(c);
  return c;
}

describe("sdk bytes — the TypeScript SDK publishes binary payloads", () => {
  it.each([
    ["fanout.v1", false],
    ["fanout.v1.msgpack", true],
  ])("sdk bytes — published on %s: a JSON and a MessagePack subscriber both get the bytes and the type", async (_, msgpack) => {
    const channel = `bytes.${msgpack ? "m" : "j"}${Date.now()}`;
    const got: GatewayMessage[][] = [[], []];
    const subscribers = [client(false), client(true)];
    const pub = client(msgpack);
    await Promise.all([...subscribers, pub].map((c) => c.connect()));
    await Promise.all(subscribers.map((c, i) => c.subscribe(channel, (m) => void got[i]!.push(m)).ready));
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff, 0x7b]);
    const one = await pub.publish(channel, png, { type: "image/png" });
    const batch = await pub.publishBatch([
      { channel, data: new Uint8Array([1, 2, 3]) },
      { channel, data: { json: true } },
    ]);
    expect(one.seq).toBeGreaterThan(0);
    expect(batch).toEqual([expect.objectContaining({ duplicate: false }), expect.objectContaining({ duplicate: false })]);
    await waitFor(() => got.every((g) => g.length === 3));
    for (const g of got) {
      expect(g.map((m) => [m.enc, m.type])).toEqual([
        ["binary", "image/png"],
        ["binary", "application/octet-stream"],
        [undefined, undefined],
      ]);
      expect(Array.from(g[0]!.data as Uint8Array)).toEqual(Array.from(png));
      expect(Array.from(g[1]!.data as Uint8Array)).toEqual([1, 2, 3]);
      expect(g[2]!.data).toEqual({ json: true });
    }
  });
});
