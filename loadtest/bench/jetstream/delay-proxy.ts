// A TCP proxy on loopback that holds every chunk for `delay` ms in each direction before passing it on, in
// order: seed 003's added latency where tc netem is not available. Unlike netem it delays reads, not packets,
// and rides on Node timers (about 1 ms granularity), so small delays come out somewhat larger; at 0 ms it is
// still one more hop. Reads pause while a direction holds more than HIGH_WATER bytes.
import { createConnection, createServer, type Server, type Socket } from "node:net";

const HIGH_WATER = 4 * 1024 * 1024;

export type DelayProxy = { url: string; port: number; setDelay(ms: number): void; close(): Promise<void> };

/** One direction: chunks queued with their due time, released by one timer at a time. */
function delayedPipe(from: Socket, to: Socket, delay: () => number): void {
  const queue: Array<{ at: number; buf: Buffer }> = [];
  let bytes = 0;
  let timer: NodeJS.Timeout | null = null;
  const flush = (): void => {
    timer = null;
    const now = performance.now();
    while (queue.length && queue[0]!.at <= now) {
      const { buf } = queue.shift()!;
      bytes -= buf.length;
      to.write(buf);
    }
    if (bytes < HIGH_WATER && from.isPaused()) from.resume();
    arm();
  };
  const arm = (): void => {
    if (timer || !queue.length) return;
    timer = setTimeout(flush, Math.max(0, queue[0]!.at - performance.now()));
  };
  from.on("data", (buf: Buffer) => {
    const d = delay();
    if (d <= 0 && !queue.length) {
      to.write(buf);
      return;
    }
    queue.push({ at: performance.now() + d, buf });
    bytes += buf.length;
    if (bytes >= HIGH_WATER) from.pause();
    arm();
  });
  from.on("close", () => {
    if (timer) clearTimeout(timer);
  });
}

export async function startDelayProxy(target: { host: string; port: number }): Promise<DelayProxy> {
  let delayMs = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = createConnection(target);
    for (const s of [client, upstream]) {
      s.setNoDelay(true);
      sockets.add(s);
    }
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
    delayedPipe(client, upstream, () => delayMs);
    delayedPipe(upstream, client, () => delayMs);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    setDelay: (ms) => {
      delayMs = ms;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
