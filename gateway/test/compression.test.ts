import { randomBytes } from "node:crypto";
import { connect as tcpConnect, type Socket } from "node:net";
import { constants, inflateRawSync } from "node:zlib";
import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";

let nats: NatsServerHandle;
let gw: GatewayHandle;
const sockets: Socket[] = [];
let n = 0;
const uniq = (base: string) => `${base}${++n}`;

type RawFrame = { rsv1: boolean; opcode: number; payload: Buffer };

/**
 * A WebSocket client written out by hand over TCP, so that each frame's RSV1 bit (set on a compressed
 * message, RFC 7692) can be seen: offers permessage-deflate or not, sends masked text frames.
 */
async function rawClient(port: number, offerDeflate: boolean): Promise<{ head: string; frames: RawFrame[]; send(text: string): void }> {
  const sock = tcpConnect(port, "127.0.0.1");
  sockets.push(sock);
  await new Promise<void>((r, j) => sock.once("connect", r).once("error", j));
  let buf = Buffer.alloc(0);
  let head: string | undefined;
  const frames: RawFrame[] = [];
  sock.on("data", (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    if (head === undefined) {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      head = buf.subarray(0, end).toString();
      buf = buf.subarray(end + 4);
    }
    for (;;) {
      if (buf.length < 2) return;
      let len = buf[1]! & 0x7f;
      let off = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        off = 10;
      }
      if (buf.length < off + len) return;
      frames.push({ rsv1: (buf[0]! & 0x40) !== 0, opcode: buf[0]! & 0x0f, payload: Buffer.from(buf.subarray(off, off + len)) });
      buf = buf.subarray(off + len);
    }
  });
  sock.write(
    "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
      `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n` +
      (offerDeflate ? "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n" : "") +
      "\r\n",
  );
  await waitFor(() => head !== undefined, { what: "upgrade response" });
  const send = (text: string) => {
    const payload = Buffer.from(text);
    const mask = randomBytes(4);
    const header =
      payload.length < 126 ? Buffer.from([0x81, 0x80 | payload.length]) : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 0xff]);
    const masked = Buffer.from(payload.map((b, i) => b ^ mask[i & 3]!));
    sock.write(Buffer.concat([header, mask, masked]));
  };
  return { head: head!, frames, send };
}

/** A compressed message's payload inflated (RFC 7692: the deflate stream without its final 0x00 0x00 0xff 0xff). */
const inflate = (p: Buffer) => inflateRawSync(Buffer.concat([p, Buffer.from([0x00, 0x00, 0xff, 0xff])]), { finishFlush: constants.Z_SYNC_FLUSH }).toString();

beforeAll(async () => {
  nats = await startNatsServer();
  gw = await startGateway({ natsUrl: nats.url, workers: 1, args: ["--compression", "shared"] });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await gw?.stop();
  await nats?.stop();
});

describe("compression — permessage-deflate (COMPRESSION=shared)", () => {
  it("a client that offers deflate gets compressed frames (RSV1) with the right payload; one that does not gets plain frames", async () => {
    const ch = uniq("z.");
    const withDeflate = await rawClient(gw.port, true);
    const plain = await rawClient(gw.port, false);
    expect(withDeflate.head).toMatch(/sec-websocket-extensions: permessage-deflate/i);
    expect(plain.head).not.toMatch(/sec-websocket-extensions/i);
    for (const c of [withDeflate, plain]) c.send(JSON.stringify({ op: "sub", id: 1, channel: ch }));
    await waitFor(() => withDeflate.frames.length >= 1 && plain.frames.length >= 1, { what: "sub replies" });
    const data = { text: "compressible ".repeat(400) };
    await httpPublish(gw.url, ch, data);
    await waitFor(() => withDeflate.frames.length >= 2 && plain.frames.length >= 2, { what: "the message on both" });
    const z = withDeflate.frames[1]!;
    const p = plain.frames[1]!;
    expect(z).toMatchObject({ rsv1: true, opcode: 1 });
    expect(p).toMatchObject({ rsv1: false, opcode: 1 });
    expect(JSON.parse(inflate(z.payload))).toMatchObject({ op: "msg", channel: ch, data });
    expect(JSON.parse(p.payload.toString())).toMatchObject({ op: "msg", channel: ch, data });
    expect(z.payload.length).toBeLessThan(p.payload.length / 10);
  });

  it("the ws package with perMessageDeflate negotiates it and reads the same messages", async () => {
    const ch = uniq("z.");
    const ws = new WebSocket(gw.wsUrl, { perMessageDeflate: true });
    const got: Record<string, unknown>[] = [];
    ws.on("message", (d: Buffer) => got.push(JSON.parse(d.toString()) as Record<string, unknown>));
    await new Promise<void>((r, j) => ws.once("open", r).once("error", j));
    expect(ws.extensions).toContain("permessage-deflate");
    ws.send(JSON.stringify({ op: "sub", id: 1, channel: ch }));
    await waitFor(() => got.find((f) => f.op === "ok"), { what: "ok" });
    for (let i = 0; i < 20; i++) await httpPublish(gw.url, ch, { i, pad: "p".repeat(500) });
    await waitFor(() => got.filter((f) => f.op === "msg").length === 20, { what: "20 messages" });
    expect(got.filter((f) => f.op === "msg").map((f) => (f.data as { i: number }).i)).toEqual([...Array(20).keys()]);
    ws.close();
  });
});
