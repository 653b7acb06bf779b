// A TCP proxy in front of a real server, to break a client's connection on demand (the client reconnects
// through it): cut every connection, stall them (no byte either way, neither side closed: a half-open
// link), refuse new ones, or stop listening for a while (on a port below the ephemeral range, so that it
// is still free when it listens again). Loopback only; every connection pair is destroyed on cut() and on
// close().
import { readFileSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";

export type TcpProxy = {
  url: string;
  port: number;
  /** Destroys every connection; returns how many there were. */
  cut(): number;
  /** Open connections stop carrying bytes either way and stay open (until cut); new ones work. Returns how many. */
  stall(): number;
  /** While on, a new connection is accepted and destroyed at once (and `refuse(true)` cuts the open ones). */
  refuse(on: boolean): void;
  /** Stops listening (connections are refused with a reset) and cuts every connection; `up()` listens again on the same port. */
  down(): Promise<void>;
  up(): Promise<void>;
  connections(): number;
  close(): Promise<void>;
};

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  let refusing = false;
  const server: Server = createServer((client) => {
    if (refusing) return void client.destroy();
    const upstream = createConnection(target);
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    client.pipe(upstream);
    upstream.pipe(client);
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
    for (const [a, b] of [...pairs]) {
      a.destroy();
      b.destroy();
    }
    pairs.clear();
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
    stall() {
      for (const [a, b] of pairs) {
        a.unpipe(b).pause();
        b.unpipe(a).pause();
      }
      return pairs.size;
    },
    refuse(on) {
      refusing = on;
      if (on) cut();
    },
    down,
    up: () => (server.listening ? Promise.resolve() : listen(port)),
    connections: () => pairs.size,
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
