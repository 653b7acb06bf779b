// One sub-cluster process: opens its share of clients (ramped, at most --max-pending attempts in
// flight), ships a window of latencies and its running totals to the master every second, and reports
// before it closes anything when told to stop — or when it is about to die.
import type { SubOptions } from "./options.js";
import type { FromWorker, ToWorker, WorkerCounts, WorkerReport } from "./ipc.js";
import { nowUs, Receiver, type ClientEvents, type ClientState } from "./receiver.js";
import { CpuMeter } from "./shared/mod.js";
import { addressOf, type AddressPlan } from "./addresses.js";
import { ConnectGate, errorReason, type ClientSetup, type SubClient } from "./clients/types.js";
import { GatewayClient } from "./clients/gateway.js";
import { GatewayLeanClient } from "./clients/gateway-lean.js";
import { SocketIoClient } from "./clients/socketio.js";
import { CentrifugeClient } from "./clients/centrifuge.js";
import { RedisClient } from "./clients/redis.js";
import { NatsClient } from "./clients/nats.js";

/** How long closing the clients may take after the final report. */
const CLOSE_BOUND_MS = 5_000;

function makeClient(opts: SubOptions, setup: ClientSetup): SubClient {
  switch (opts.target) {
    case "gateway":
      return opts.engine === "ws" ? new GatewayClient(setup) : new GatewayLeanClient(setup);
    case "socketio":
      return new SocketIoClient(setup);
    case "centrifuge":
      return new CentrifugeClient(setup);
    case "redis":
      return new RedisClient(setup);
    case "nats":
      return new NatsClient(setup);
  }
}

export class SubWorker implements ClientEvents {
  private readonly clients: SubClient[] = [];
  private readonly rx: Receiver;
  private readonly cpu = new CpuMeter();
  /** Connection attempts in flight at once (--max-pending): keeps listen backlogs from overflowing. */
  private readonly gate: ConnectGate;
  private connected = 0;
  private peakConnected = 0;
  private connectFailures = 0;
  private readonly failures: Record<string, number> = {};
  private reconnects = 0;
  private subErrors = 0;
  private firstError: string | null = null;
  private stopped = false;
  private rampTimer: NodeJS.Timeout | null = null;
  private tickTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly index: number,
    private readonly opts: SubOptions,
    private readonly plan: AddressPlan,
    clockOffsetUs: number | null,
    private readonly send: (m: FromWorker) => void,
  ) {
    // Replay from the start means every sequence from 1 is owed to the client.
    this.rx = new Receiver(opts.from === "all", clockOffsetUs);
    this.gate = new ConnectGate(opts.maxPending);
  }

  start(): void {
    const { opts } = this;
    const t0 = performance.now();
    const perProcessRate = opts.ramp > 0 ? opts.ramp / opts.processes : 0;
    const rampStep = (): void => {
      this.rampTimer = null;
      if (this.stopped) return;
      const allowed = perProcessRate > 0 ? Math.floor(((performance.now() - t0) / 1000) * perProcessRate) + 1 : Infinity;
      // Without a ramp, clients are created as the gate lets attempts through, so none waits in its queue long.
      const room = perProcessRate > 0 ? Infinity : opts.maxPending * 2 - this.gate.waiting;
      let opened = 0;
      while (this.clients.length < opts.clientsPerProcess && this.clients.length < allowed && opened < room) {
        this.open(this.clients.length);
        opened++;
      }
      if (this.clients.length < opts.clientsPerProcess) this.rampTimer = setTimeout(rampStep, 10);
    };
    rampStep();
    this.tickTimer = setInterval(() => this.tick(), 1000);
  }

  private open(i: number): void {
    const { opts } = this;
    const { host, localAddress, localPort } = addressOf(this.plan, this.index * opts.clientsPerProcess + i);
    const client = makeClient(opts, {
      host,
      localAddress,
      localPort,
      port: opts.port,
      path: opts.path,
      channels: opts.channels,
      from: opts.from,
      rx: this.rx,
      events: this,
      gate: this.gate,
    });
    this.clients.push(client);
    void client.start();
  }

  subscribed(_c: ClientState): void {
    this.connected++;
    if (this.connected > this.peakConnected) this.peakConnected = this.connected;
  }
  unsubscribed(_c: ClientState): void {
    this.connected--;
  }
  connectFailed(err: unknown, reason = errorReason(err)): void {
    this.connectFailures++;
    this.failures[reason] = (this.failures[reason] ?? 0) + 1;
    this.firstError ??= err instanceof Error ? err.message : String(err);
  }
  reconnecting(): void {
    this.reconnects++;
  }
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

  private report(): WorkerReport {
    const neverConnected: Record<string, number> = {};
    for (const c of this.clients) {
      if (c.state.everSubscribed) continue;
      const why = c.state.lastFailure ?? "pending";
      neverConnected[why] = (neverConnected[why] ?? 0) + 1;
    }
    const window = this.rx.window.toJSON();
    this.rx.window.reset();
    return {
      index: this.index,
      counts: this.counts(),
      failures: { ...this.failures },
      neverConnected,
      publishers: this.rx.publishers,
      window,
      cpuPct: this.cpu.sample(),
      firstError: this.firstError,
      ...(this.rx.firstMsgUs ? { messagesUs: { first: this.rx.firstMsgUs, last: this.rx.lastMsgUs } } : {}),
    };
  }

  private tick(): void {
    this.send({
      ...this.report(),
      type: "tick",
      connected: this.connected,
      started: this.clients.length,
      done: this.done(),
      idleMs: this.rx.lastRecvUs ? (nowUs() - this.rx.lastRecvUs) / 1000 : -1,
    });
  }

  /** Stops ramping and ticking and returns the final report; the clients are closed afterwards (closeAll). */
  final(crashed?: string): FromWorker {
    this.stopped = true;
    if (this.rampTimer) clearTimeout(this.rampTimer);
    if (this.tickTimer) clearInterval(this.tickTimer);
    return { ...this.report(), type: "final", ...(crashed ? { crashed } : {}) };
  }

  /** Closes every client, bounded in time. */
  async closeAll(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(this.clients.map((c) => c.stop().catch(() => undefined))),
      new Promise((r) => {
        timer = setTimeout(r, CLOSE_BOUND_MS);
      }),
    ]);
    clearTimeout(timer);
  }

  /** Totals over all clients; loss is counted per (client, publisher), or against --expect per client. */
  counts(): WorkerCounts {
    const c: WorkerCounts = {
      planned: this.opts.clientsPerProcess,
      clients: this.clients.length,
      everConnected: 0,
      peakConnected: this.peakConnected,
      received: this.rx.received,
      distinct: 0,
      expected: 0,
      lost: 0,
      duplicated: 0,
      outOfOrder: 0,
      late: 0,
      endMarkers: this.rx.endMarkers,
      connectFailures: this.connectFailures,
      reconnects: this.reconnects,
      subErrors: this.subErrors,
      badFrames: this.rx.badFrames,
    };
    const expect = this.opts.expect;
    for (const client of this.clients) {
      const s = client.state;
      if (s.everSubscribed) c.everConnected++;
      let distinct = 0;
      let expected = 0;
      let lost = 0;
      for (const t of s.all()) {
        distinct += t.distinct;
        expected += t.expected();
        lost += t.lost();
        c.duplicated += t.duplicates;
        c.outOfOrder += t.outOfOrder;
        c.late += t.late;
      }
      c.distinct += distinct;
      if (expect !== null) {
        // A client that never subscribed is owed its messages too: --expect is per planned client.
        c.expected += expect;
        c.lost += Math.max(0, expect - distinct);
      } else {
        c.expected += expected;
        c.lost += lost;
      }
    }
    if (expect !== null) {
      const unstarted = this.opts.clientsPerProcess - this.clients.length;
      c.expected += unstarted * expect;
      c.lost += unstarted * expect;
    }
    return c;
  }
}

/** Entry point of a forked process. */
export function runWorker(): void {
  let worker: SubWorker | null = null;
  let reported = false;
  const send = (m: FromWorker): void => {
    process.send?.(m);
  };
  const finish = (crashed?: string): void => {
    const w = worker;
    if (!w || reported) {
      if (crashed) process.exit(1);
      return;
    }
    reported = true;
    // The report goes first: whatever happens while closing, the master has the counts.
    process.send?.(w.final(crashed), () => {
      if (crashed) process.exit(1);
      void w.closeAll().then(() => process.exit(0));
    });
  };
  // Ctrl-C reaches the whole process group; the master decides when this process stops.
  process.on("SIGINT", () => undefined);
  process.on("disconnect", () => process.exit(0));
  process.on("uncaughtException", (err) => {
    console.error(`sub-cluster process: ${err.stack ?? err.message}`);
    finish(`crashed: ${err.message}`);
  });
  process.on("message", (m: ToWorker) => {
    if (m.type === "start" && !worker) {
      worker = new SubWorker(m.index, m.opts, m.plan, m.clockOffsetUs, send);
      worker.start();
    } else if (m.type === "stop") {
      if (!worker) {
        process.exit(0);
        return;
      }
      finish();
    }
  });
}
