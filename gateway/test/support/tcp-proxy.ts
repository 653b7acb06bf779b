// A TCP proxy in front of a real server, to cut a client's connection on demand (the client reconnects
// through it). Loopback only; every connection pair is destroyed on cut() and on close().
import { createConnection, createServer, type Server, type Socket } from "node:net";

export type TcpProxy = { url: string; port: number; cut(): number; connections(): number; close(): Promise<void> };

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
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
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  const cut = (): number => {
    const n = pairs.size;
    for (const [a, b] of [...pairs]) {
      a.destroy();
      b.destroy();
    }
    pairs.clear();
    return n;
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    cut,
    connections: () => pairs.size,
    close: async () => {
      cut();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
