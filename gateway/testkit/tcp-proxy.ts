// The one TCP proxy of the tests, the conformance suite, the chaos run and the benches: loopback, in front of
// a real server, and able to break the link in the ways a network does:
//   cut()        drops every open connection (the client sees a reset and reconnects through the proxy);
//   refuse(on)   while on, drops every connection and every new one at once;
//   down()/up()  stops listening (connections are refused with a reset) and listens again on the same port,
//                which lies below the kernel's ephemeral range so that no outgoing connection can take it;
//   stall(on)    the open connections stop carrying bytes either way, neither side closed (a half-open link,
//                or a partition that heals); bytes are held in order and sent on stall(false); new
//                connections are not affected;
//   delay(ms)    holds each chunk ms in each direction from now on (latency; Node timers, ~1 ms granularity);
//   refuseFrom(peer, on)  while on, drops the connections of one peer (named by `peerOf` from the client's
//                first bytes) and every new one it makes; the other peers' connections go on.
// Bytes are forwarded in order in every mode; a direction holding more than HIGH_WATER bytes pauses its reads.
import { readFileSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";

const HIGH_WATER = 4 * 1024 * 1024;

export type TcpProxy = {
  /** `nats://127.0.0.1:<port>`, for a NATS client pointed at the proxy. */
  readonly url: string;
  readonly port: number;
  /** Drops every open connection; returns how many there were. */
  cut(): number;
  /** While on, a new connection is accepted and dropped at once (and `refuse(true)` cuts the open ones). */
  refuse(on: boolean): void;
  /** Stops listening (connections are refused with a reset) and cuts every connection; `up()` listens again on the same port. */
  down(): Promise<void>;
  up(): Promise<void>;
  /** On: the open connections hold every byte either way (in order) and stay open; off: what they held goes on. Returns how many. */
  stall(on?: boolean): number;
  /** Holds each chunk this long in each direction from now on (0: straight through). */
  delay(ms: number): void;
  /** While on, the connections whose client `peerOf` names `peer` are dropped, open and new (from their first bytes). */
  refuseFrom(peer: string, on: boolean): void;
  /** Open connections (client side). */
  connections(): number;
  /** Bytes held in the proxy now (stalled or delayed), both directions. */
  held(): number;
  close(): Promise<void>;
};

type Pair = { upstream: Socket; lanes: [Lane, Lane]; stalled: boolean; peer?: string | undefined };
type Timing = { delayMs: number };

/** One direction of one connection: chunks queued with their due time, released by one timer at a time. */
class Lane {
  private readonly q: { at: number; buf: Buffer }[] = [];
  private timer: NodeJS.Timeout | undefined;
  bytes = 0;

  constructor(
    private readonly from: Socket,
    private readonly to: Socket,
    private readonly held: () => boolean,
    private readonly timing: Timing,
  ) {
    from.on("data", (buf: Buffer) => this.push(buf));
  }

  private push(buf: Buffer): void {
    if (this.to.destroyed) return;
    if (!this.held() && this.timing.delayMs <= 0 && this.q.length === 0) {
      if (!this.to.write(buf)) {
        this.from.pause();
        this.to.once("drain", () => this.from.resume());
      }
      return;
    }
    this.q.push({ at: performance.now() + this.timing.delayMs, buf });
    this.bytes += buf.length;
    if (this.bytes >= HIGH_WATER) this.from.pause();
    this.pump();
  }

  pump(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.held()) return;
    const now = performance.now();
    while (this.q.length && this.q[0]!.at <= now) {
      const { buf } = this.q.shift()!;
      this.bytes -= buf.length;
      this.to.write(buf);
    }
    if (this.bytes < HIGH_WATER && this.from.isPaused()) this.from.resume();
    if (this.q.length) this.timer = setTimeout(() => this.pump(), Math.max(0, this.q[0]!.at - now));
  }

  stop(): void {
    clearTimeout(this.timer);
  }
}

export type TcpProxyOptions = {
  /** Names the peer a connection comes from, from the first bytes its client sends (for refuseFrom). */
  peerOf?: (first: Buffer) => string | undefined;
};

export async function startTcpProxy(target: { host: string; port: number }, o: TcpProxyOptions = {}): Promise<TcpProxy> {
  const timing: Timing = { delayMs: 0 };
  let refusing = false;
  const refused = new Set<string>();
  const pairs = new Map<Socket, Pair>();
  const drop = (client: Socket): void => {
    const p = pairs.get(client);
    client.destroy();
    if (!p) return;
    pairs.delete(client);
    p.upstream.destroy();
    for (const l of p.lanes) l.stop();
  };
  const server: Server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = createConnection(target);
    for (const s of [client, upstream]) s.setNoDelay(true);
    const pair = { upstream, stalled: false } as Pair;
    const held = () => pair.stalled;
    // Registered before the lanes: a refused peer's first bytes are dropped with its connection, never forwarded.
    if (o.peerOf)
      client.once("data", (first: Buffer) => {
        pair.peer = o.peerOf!(first);
        if (pair.peer !== undefined && refused.has(pair.peer)) drop(client);
      });
    pair.lanes = [new Lane(client, upstream, held, timing), new Lane(upstream, client, held, timing)];
    pairs.set(client, pair);
    for (const s of [client, upstream]) s.on("error", () => drop(client)).on("close", () => drop(client));
  });
  const listen = (port: number) =>
    new Promise<void>((resolve, reject) => {
      server.once("error", reject).listen(port, "127.0.0.1", () => {
        server.off("error", reject);
        resolve();
      });
    });
  const port = await listenBelowEphemeral(listen);
  const cut = (): number => {
    const n = pairs.size;
    for (const c of [...pairs.keys()]) drop(c);
    return n;
  };
  const down = async () => {
    const closed = new Promise<void>((r) => (server.listening ? server.close(() => r()) : r()));
    cut();
    await closed;
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    cut,
    refuse(on) {
      refusing = on;
      if (on) cut();
    },
    down,
    up: () => (server.listening ? Promise.resolve() : listen(port)),
    stall(on = true) {
      for (const p of pairs.values()) {
        p.stalled = on;
        if (!on) for (const l of p.lanes) l.pump();
      }
      return pairs.size;
    },
    delay(ms) {
      timing.delayMs = Math.max(0, ms);
      for (const p of pairs.values()) for (const l of p.lanes) l.pump();
    },
    refuseFrom(peer, on) {
      if (!on) return void refused.delete(peer);
      refused.add(peer);
      for (const [c, p] of pairs) if (p.peer === peer) drop(c);
    },
    connections: () => pairs.size,
    held: () => [...pairs.values()].reduce((s, p) => s + p.lanes[0].bytes + p.lanes[1].bytes, 0),
    close: down,
  };
}

/**
 * Listens on a random free port below the kernel's ephemeral range: no outgoing connection is ever given
 * such a port as its source, so after `down()` the same port can be listened on again.
 */
async function listenBelowEphemeral(listen: (port: number) => Promise<void>): Promise<number> {
  let low = 32_768;
  try {
    low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]) || low;
  } catch {
    /* not Linux: the usual default */
  }
  const from = Math.min(10_000, low - 1_000);
  for (let tries = 0; ; tries++) {
    const port = from + Math.floor(Math.random() * (low - from));
    try {
      await listen(port);
      return port;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EADDRINUSE" || tries >= 50) throw e;
    }
  }
}
