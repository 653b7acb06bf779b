// One sub-cluster process: opens its share of clients (ramped, with a cap on handshakes in flight),
// ships a window of latencies to the master every second, and totals its counters when told to stop.
import type { SubOptions } from "./options.js";
import type { FromWorker, ToWorker, WorkerCounts } from "./ipc.js";
import { Receiver, type ClientEvents, type ClientState } from "./receiver.js";
import { CpuMeter } from "./cpu.js";
import type { ClientSetup, SubClient } from "./clients/types.js";
import { GatewayClient } from "./clients/gateway.js";
import { RedisClient } from "./clients/redis.js";
import { NatsClient } from "./clients/nats.js";

/** Connection attempts in flight at once per process (keeps listen backlogs from overflowing). */
const MAX_PENDING_CONNECTS = 256;

function makeClient(opts: SubOptions, setup: ClientSetup): SubClient {
  switch (opts.target) {
    case "gateway": return new GatewayClient(setup);
    case "redis": return new RedisClient(setup);
    case "nats": return new NatsClient(setup);
  }
}

export class SubWorker implements ClientEvents {
  private readonly clients: SubClient[] = [];
  private readonly rx: Receiver;
  private readonly cpu = new CpuMeter();
  private connected = 0;
  private peakConnected = 0;
  private connectFailures = 0;
  private reconnects = 0;
  private subErrors = 0;
  private firstError: string | null = null;
  private pending = 0;
  private stopped = false;
  private rampTimer: NodeJS.Timeout | null = null;
  private tickTimer: NodeJS.Timeout | null = null;

  constructor(private readonly index: number, private readonly opts: SubOptions, private readonly send: (m: FromWorker) => void) {
    // Replay from the start means every sequence from 1 is owed to the client.
    this.rx = new Receiver(opts.from === "all");
  }

  start(): void {
    const { opts } = this;
    const t0 = performance.now();
    const perProcessRate = opts.ramp > 0 ? opts.ramp / opts.processes : 0;
    const rampStep = (): void => {
      if (this.stopped) return;
      const allowed = perProcessRate > 0 ? Math.floor(((performance.now() - t0) / 1000) * perProcessRate) + 1 : Infinity;
      while (this.clients.length < opts.clientsPerProcess && this.clients.length < allowed && this.pending < MAX_PENDING_CONNECTS) {
        this.open(this.clients.length);
      }
      if (this.clients.length < opts.clientsPerProcess) this.rampTimer = setTimeout(rampStep, 10);
    };
    rampStep();
    this.tickTimer = setInterval(() => this.tick(), 1000);
  }

  private open(i: number): void {
    const { opts } = this;
    const global = this.index * opts.clientsPerProcess + i;
    const client = makeClient(opts, {
      host: opts.hosts[global % opts.hosts.length]!,
      port: opts.port,
      path: opts.path,
      channels: opts.channels,
      from: opts.from,
      rx: this.rx,
      events: this,
    });
    this.clients.push(client);
    this.pending++;
    void client.start().finally(() => { this.pending--; });
  }

  subscribed(_c: ClientState): void {
    this.connected++;
    if (this.connected > this.peakConnected) this.peakConnected = this.connected;
  }
  unsubscribed(_c: ClientState): void { this.connected--; }
  connectFailed(err: unknown): void {
    this.connectFailures++;
    this.firstError ??= err instanceof Error ? err.message : String(err);
  }
  reconnecting(): void { this.reconnects++; }
  subError(message: string): void {
    this.subErrors++;
    this.firstError ??= `subscribe refused: ${message}`;
  }

  private done(): boolean {
    if (this.clients.length < this.opts.clientsPerProcess) return false;
    let any = false;
    for (const c of this.clients) {
      const s = c.state;
      if (!s.everSubscribed) continue;
      any = true;
      if (this.opts.expect !== null ? s.distinct() < this.opts.expect : !s.allEnded()) return false;
    }
    return any;
  }

  private tick(): void {
    const w = this.rx.window;
    this.send({
      type: "tick",
      index: this.index,
      connected: this.connected,
      started: this.clients.length,
      window: w.toJSON(),
      cpuPct: this.cpu.sample(),
      done: this.done(),
      idleMs: this.rx.lastMessageAt ? performance.now() - this.rx.lastMessageAt : -1,
      firstError: this.firstError,
    });
    w.reset();
  }

  /** Stops ramping and ticking, closes every client and returns the final report. */
  async stop(): Promise<FromWorker> {
    this.stopped = true;
    if (this.rampTimer) clearTimeout(this.rampTimer);
    if (this.tickTimer) clearInterval(this.tickTimer);
    const window = this.rx.window.toJSON();
    const cpuPct = this.cpu.sample();
    const counts = this.counts();
    await Promise.all(this.clients.map((c) => c.stop().catch(() => undefined)));
    return { type: "final", index: this.index, window, counts, cpuPct, firstError: this.firstError };
  }

  /** Totals over all clients; loss is counted per (client, publisher), or against --expect per client. */
  counts(): WorkerCounts {
    const c: WorkerCounts = {
      clients: this.clients.length, everConnected: 0, peakConnected: this.peakConnected,
      received: this.rx.received, distinct: 0, expected: 0, lost: 0, duplicated: 0, outOfOrder: 0, late: 0,
      endMarkers: this.rx.endMarkers, connectFailures: this.connectFailures, reconnects: this.reconnects,
      subErrors: this.subErrors, badFrames: this.rx.badFrames,
    };
    const expect = this.opts.expect;
    for (const client of this.clients) {
      const s = client.state;
      if (s.everSubscribed) c.everConnected++;
      let distinct = 0;
      let expected = 0;
      let lost = 0;
      for (const t of s.trackers.values()) {
        distinct += t.distinct;
        expected += t.expected();
        lost += t.lost();
        c.duplicated += t.duplicates;
        c.outOfOrder += t.outOfOrder;
        c.late += t.late;
      }
      c.distinct += distinct;
      if (expect !== null) {
        c.expected += expect;
        c.lost += Math.max(0, expect - distinct);
      } else {
        c.expected += expected;
        c.lost += lost;
      }
    }
    return c;
  }
}

/** Entry point of a forked process. */
export function runWorker(): void {
  let worker: SubWorker | null = null;
  const send = (m: FromWorker): void => { process.send?.(m); };
  // Ctrl-C reaches the whole process group; the master decides when this process stops.
  process.on("SIGINT", () => undefined);
  process.on("disconnect", () => process.exit(0));
  process.on("message", (m: ToWorker) => {
    if (m.type === "start" && !worker) {
      worker = new SubWorker(m.index, m.opts, send);
      worker.start();
    } else if (m.type === "stop") {
      const w = worker;
      if (!w) { process.exit(0); return; }
      void w.stop().then((final) => process.send?.(final, () => process.exit(0)));
    }
  });
}
