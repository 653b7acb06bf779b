// The network between one gateway instance and one NATS node, under the run's control: a TCP proxy that
// forwards in order and can stall both directions (a partition that heals before either side's pings notice)
// or delay them. Connections are never cut here, so the gateway's NATS client keeps using the proxy (it would
// otherwise reconnect straight to the addresses the cluster advertises). Loopback only.
import { createConnection, createServer, type Server, type Socket } from "node:net";

type Lane = { dest: Socket; q: Array<{ at: number; buf: Buffer }>; timer?: NodeJS.Timeout };

export class LinkProxy {
  private server: Server;
  private lanes = new Set<Lane>();
  private sockets = new Set<Socket>();
  private stalled = false;
  private delayMs = 0;
  port = 0;

  constructor(private readonly target: { host: string; port: number }) {
    this.server = createServer((client) => this.pair(client));
  }

  async listen(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, "127.0.0.1", r));
    this.port = (this.server.address() as { port: number }).port;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** Holds every byte in both directions until set back (ordering kept). */
  stall(on: boolean): void {
    this.stalled = on;
    if (!on) for (const l of this.lanes) this.pump(l);
  }

  /** Adds this much delay to every chunk from now on, each direction. */
  delay(ms: number): void {
    this.delayMs = ms;
    for (const l of this.lanes) this.pump(l);
  }

  private pair(client: Socket): void {
    const upstream = createConnection(this.target);
    const up: Lane = { dest: upstream, q: [] };
    const down: Lane = { dest: client, q: [] };
    this.lanes.add(up).add(down);
    this.sockets.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      for (const l of [up, down]) {
        clearTimeout(l.timer);
        this.lanes.delete(l);
      }
      this.sockets.delete(client);
      this.sockets.delete(upstream);
    };
    client.on("data", (b: Buffer) => this.push(up, b));
    upstream.on("data", (b: Buffer) => this.push(down, b));
    for (const s of [client, upstream]) s.on("error", drop).on("close", drop);
  }

  private push(l: Lane, buf: Buffer): void {
    l.q.push({ at: Date.now() + this.delayMs, buf });
    this.pump(l);
  }

  private pump(l: Lane): void {
    clearTimeout(l.timer);
    if (this.stalled) return;
    const now = Date.now();
    while (l.q.length && l.q[0]!.at <= now) l.dest.write(l.q.shift()!.buf);
    if (l.q.length) l.timer = setTimeout(() => this.pump(l), l.q[0]!.at - now);
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    for (const l of this.lanes) clearTimeout(l.timer);
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}
