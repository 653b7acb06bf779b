// bench:fanout's client processes: K sockets on one channel through one door, counting every message (each
// socket's first and last `s`, so that what it missed is known) and sampling latency. Doors: the gateway's
// own protocol (/ws, which bare uWS imitates) and the Centrifuge client protocol (/connection/websocket) in
// JSON or Protobuf, spoken by the load tools' centrifuge wire (subtools/src/clients/centrifuge-wire.ts).
import WebSocket from "ws";
import { nowUs } from "./common.js";
import { LeanSocket } from "../../subtools/src/lean/connection.js";
import { Opcode } from "../../subtools/src/lean/frame-reader.js";
import {
  CENTRIFUGE_PROTOBUF,
  centrifugeCommand,
  pongOf,
  readCentrifugeFrame,
  type CentrifugeFormat,
  type CentrifugeReply,
} from "../../subtools/src/clients/centrifuge-wire.js";

/** The doors a row's clients connect through. */
export const DOORS = ["native", "centrifuge-json", "centrifuge-protobuf"] as const;
export type Door = (typeof DOORS)[number];

/** The gateway channel of the bench, and its name on the Centrifuge door (docs/backends.md, Channel names). */
export const CENTRIFUGE_CHANNEL = (channel: string): string => channel.replace(".", ":");

/** One socket's count: the first and last `s` it got, how many, and how many came again or out of order. */
class SockCount {
  first = 0;
  last = 0;
  n = 0;
  dup = 0;
}

/** What a client process says when asked to count: over every socket, since the row started. */
export type Count = { delivered: number; expected: number; dup: number };

/** The bench's tally of one client process: messages in the window, latency samples, and each socket's count. */
class Tally {
  received = 0;
  frames = 0;
  lat: number[] = [];
  readonly socks: SockCount[] = [];

  /** The start of a frame: whether its messages' latencies are sampled (every 8th frame, each of its messages). */
  sampleFrame(): boolean {
    return (++this.frames & 7) === 0;
  }

  /**
   * One message, `buf[start, end)` holding its payload (the bench's payloads are JSON with "t":<µs sent> and
   * "s":<number> first, and no line feed). A scan instead of JSON.parse keeps the client light.
   */
  msg(c: SockCount, buf: Buffer, start: number, end: number, recvUs: number, sample: boolean): void {
    this.received++;
    const si = buf.indexOf(S_KEY, start);
    if (si >= 0 && si < end) {
      const s = digits(buf, si + 4, end);
      if (c.first === 0) c.first = s;
      if (s <= c.last) c.dup++;
      else c.last = s;
      c.n++;
    }
    if (!sample) return;
    const ti = buf.indexOf(T_KEY, start);
    if (ti >= 0 && ti < end) this.lat.push(recvUs - digits(buf, ti + 4, end));
  }

  /** `published` messages were sent from s = 1: each socket should have all from its first one on. */
  count(published: number): Count {
    const r: Count = { delivered: 0, expected: 0, dup: 0 };
    for (const c of this.socks) {
      r.delivered += c.n - c.dup;
      r.expected += c.first === 0 ? published : published - c.first + 1;
      r.dup += c.dup;
    }
    return r;
  }
}
const T_KEY = Buffer.from('"t":');
const S_KEY = Buffer.from('"s":');

function digits(buf: Buffer, from: number, end: number): number {
  let n = 0;
  for (let j = from; j < end; j++) {
    const c = buf[j]! - 48;
    if (c < 0 || c > 9) break;
    n = n * 10 + c;
  }
  return n;
}

/**
 * K sockets through `door`, then serves the bench's asks: `report` (the window's deliveries and latency
 * samples), `count` (every socket's tally against what was published), `exit`.
 */
export async function clientMain(url: string, channel: string, k: number, deflate: boolean, door: Door): Promise<void> {
  const tally = new Tally();
  const closers: (() => void)[] = [];
  for (let i = 0; i < k; i++) {
    const c = new SockCount();
    tally.socks.push(c);
    if (door !== "native") closers.push(await centrifugeClient(url, channel, door === "centrifuge-json" ? "json" : "protobuf", tally, c));
    else closers.push(deflate ? await wsClient(url, channel, tally, c) : await leanClient(url, channel, tally, c));
  }
  process.send!({ type: "ready" });
  process.on("message", (m: { type: string; published?: number }) => {
    if (m.type === "report") {
      process.send!({ type: "report", received: tally.received, latUs: tally.lat });
      tally.received = 0;
      tally.lat = [];
    } else if (m.type === "count") process.send!({ type: "count", ...tally.count(m.published!) });
    else if (m.type === "exit") {
      for (const close of closers) close();
      process.exit(0);
    }
  });
}

/** A native frame: a `msg` frame or a coalesced frame of them, one a line; other frames (the sub's `ok`) are not counted. */
function nativeFrame(tally: Tally, c: SockCount, buf: Buffer, start: number, end: number, recvUs: number): void {
  if (buf[start + 7] !== 0x6d /* {"op":"m */) return;
  const sample = tally.sampleFrame();
  let from = start;
  while (from < end) {
    let nl = buf.indexOf(10, from);
    if (nl < 0 || nl > end) nl = end;
    tally.msg(c, buf, from, nl, recvUs, sample);
    from = nl + 1;
  }
}

/**
 * The native door on the lean engine (subtools/src/lean: a WebSocket on a plain TCP socket, no allocation per
 * read), so the clients cost less than the servers they measure: at 2,000 sockets × 500 msg/s, one frame per
 * message, `ws` clients took the box's cores.
 */
function leanClient(url: string, channel: string, tally: Tally, c: SockCount): Promise<() => void> {
  const u = new URL(url);
  const sub = JSON.stringify({ op: "sub", id: 1, channel });
  return new Promise((resolve, reject) => {
    const sock: LeanSocket = new LeanSocket(
      { host: u.hostname, port: Number(u.port), path: u.pathname + u.search, timeoutMs: 10_000 },
      {
        open: () => {
          sock.send(sub);
          resolve(() => sock.destroy());
        },
        message: (op, buf, start, end, recvUs) => {
          if (op === Opcode.Text) nativeFrame(tally, c, buf, start, end, recvUs);
        },
        closed: (info) => reject(info.error ?? new Error(`bench client closed (${info.reason})`)),
      },
    );
  });
}

/** With permessage-deflate (which the lean engine does not speak) the native door's clients are `ws` clients. */
async function wsClient(url: string, channel: string, tally: Tally, c: SockCount): Promise<() => void> {
  const ws = new WebSocket(url, { perMessageDeflate: true, skipUTF8Validation: true });
  await new Promise<void>((res, rej) => {
    ws.once("open", () => res());
    ws.once("error", rej);
  });
  if (!ws.extensions.includes("permessage-deflate")) throw new Error("the server did not negotiate permessage-deflate");
  ws.on("message", (d: Buffer) => nativeFrame(tally, c, d, 0, d.length, nowUs()));
  ws.send(JSON.stringify({ op: "sub", id: 1, channel }));
  return () => ws.terminate();
}

/** The Centrifuge door on the lean engine: connect (anonymous), subscribe to the channel's Centrifuge name, count its publications. */
function centrifugeClient(url: string, channel: string, format: CentrifugeFormat, tally: Tally, c: SockCount): Promise<() => void> {
  const u = new URL(url);
  const send = (x: string | Buffer) => (typeof x === "string" ? sock.send(x) : sock.sendBinary(x));
  let subscribed = false;
  let sock: LeanSocket;
  // The frame being read, for `pub` (one handler object per socket, not one closure per frame).
  const frame: { buf: Buffer; recvUs: number; sample: boolean } = { buf: Buffer.alloc(0), recvUs: 0, sample: false };
  return new Promise((resolve, reject) => {
    const handlers = {
      pub: (s: number, e: number) => tally.msg(c, frame.buf, s, e, frame.recvUs, frame.sample),
      ping: () => void send(pongOf(format)),
      other: (r: CentrifugeReply) => {
        if (r.error || r.push?.disconnect) {
          const e = r.error ?? r.push!.disconnect!;
          reject(
            new Error(
              `centrifuge door: ${r.error ? "error" : "disconnect"} ${e.code ?? "?"}: ${"message" in e ? e.message : (e as { reason?: string }).reason}`,
            ),
          );
          sock.destroy();
        } else if (r.id === 1 && r.connect !== undefined) send(centrifugeCommand(format, { id: 2, subscribe: { channel: CENTRIFUGE_CHANNEL(channel) } }));
        else if (r.id === 2 && r.subscribe !== undefined && !subscribed) {
          subscribed = true;
          resolve(() => sock.destroy());
        }
      },
    };
    sock = new LeanSocket(
      {
        host: u.hostname,
        port: Number(u.port),
        path: u.pathname,
        timeoutMs: 10_000,
        ...(format === "protobuf" ? { headers: { "Sec-WebSocket-Protocol": CENTRIFUGE_PROTOBUF } } : {}),
      },
      {
        open: () => void send(centrifugeCommand(format, { id: 1, connect: { name: "bench-fanout" } })),
        message: (op, buf, start, end, recvUs) => {
          if (op !== (format === "json" ? Opcode.Text : Opcode.Binary)) return;
          frame.buf = buf;
          frame.recvUs = recvUs;
          frame.sample = tally.sampleFrame();
          readCentrifugeFrame(format, buf, start, end, handlers);
        },
        closed: (info) => reject(info.error ?? new Error(`bench client closed (${info.reason}, code ${info.code ?? "none"})`)),
      },
    );
  });
}
