// One pub-cluster process: a publisher id per channel, `passes` ticks on a fixed schedule (no drift),
// `perInterval` messages per tick spread round-robin over the channels, at most `window` in flight,
// then an end marker per channel carrying that channel's total.
import { hostname } from "node:os";
import type { PubOptions, PubTarget } from "./options.js";
import type { FromPubWorker, PubCounts, ToPubWorker } from "./ipc.js";
import type { Publisher, PublisherSetup } from "./publishers/types.js";
import { RedisPublisher } from "./publishers/redis.js";
import { JetStreamPublisher, NatsPublisher } from "./publishers/nats.js";
import { GatewayHttpPublisher } from "./publishers/gateway-http.js";
import { GatewayWsPublisher } from "./publishers/gateway-ws.js";
import { SocketIoPublisher } from "./publishers/socketio.js";
import { CentrifugePublisher } from "./publishers/centrifuge.js";
import { BatchingPublisher } from "./publishers/batching.js";
import { CpuMeter, dataPayload, endPayload, LatencyStats, nowUs, safePublisherId } from "../../subtools/src/shared/mod.js";

const END_MARKER_ATTEMPTS = 3;

export function makePublisher(target: PubTarget, setup: PublisherSetup): Publisher {
  const batch = setup.opts.batch;
  if (batch > 1 && target === "gateway-http") return new BatchingPublisher(new GatewayHttpPublisher(setup), batch);
  if (batch > 1 && target === "gateway-ws") return new BatchingPublisher(new GatewayWsPublisher(setup), batch);
  switch (target) {
    case "redis":
      return new RedisPublisher(setup);
    case "nats":
      return new NatsPublisher(setup);
    case "jetstream":
      return new JetStreamPublisher(setup);
    case "gateway-http":
      return new GatewayHttpPublisher(setup);
    case "gateway-ws":
      return new GatewayWsPublisher(setup);
    case "socketio":
      return new SocketIoPublisher(setup);
    case "centrifuge":
      return new CentrifugePublisher(setup);
  }
}

export class PubWorker {
  readonly counts: PubCounts = { sent: 0, acked: 0, failed: 0, endMarkers: 0, endMarkersFailed: 0, lateTicks: 0 };
  readonly window = new LatencyStats();
  private readonly pub: Publisher;
  private readonly ids: string[];
  private readonly seqs: number[];
  private inFlight = 0;
  private waiters: (() => void)[] = [];
  private stopped = false;
  private firstError: string | null = null;
  private firstSendMs = 0;
  private lastDoneMs = 0;
  private readonly cpu = new CpuMeter();

  /** @param clockOffsetUs this host's clock offset to the server, written into every payload ("o"). */
  constructor(
    private readonly index: number,
    private readonly opts: PubOptions,
    private readonly clockOffsetUs: number | null = null,
  ) {
    this.pub = makePublisher(opts.target, { host: opts.hosts[index % opts.hosts.length]!, opts });
    const base = safePublisherId(`${hostname()}-${process.pid}-${index + 1}`);
    this.ids = opts.channels.map((c) => safePublisherId(`${base}:${c}`));
    this.seqs = opts.channels.map(() => 0);
  }

  tick(): FromPubWorker {
    const m: FromPubWorker = {
      type: "tick",
      index: this.index,
      counts: { ...this.counts },
      inFlight: this.inFlight,
      window: this.window.toJSON(),
      cpuPct: this.cpu.sample(),
      firstError: this.firstError,
    };
    this.window.reset();
    return m;
  }

  /** Asks the run to end early (Ctrl-C at the master): the current pass finishes, end markers still go out. */
  stop(): void {
    this.stopped = true;
  }

  async run(): Promise<FromPubWorker> {
    const { opts } = this;
    await this.pub.connect();
    // Processes take turns within the interval rather than all publishing at its start.
    const offset = (opts.intervalMs * this.index) / opts.processes;
    const t0 = performance.now() + offset;
    let rr = 0;
    for (let pass = 0; pass < opts.passes && !this.stopped; pass++) {
      const due = t0 + pass * opts.intervalMs;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      else if (-wait > opts.intervalMs && opts.intervalMs > 0) this.counts.lateTicks++;
      for (let i = 0; i < opts.perInterval; i++) {
        if (this.inFlight >= opts.window) await new Promise<void>((r) => this.waiters.push(r));
        const p = this.publishOne(rr++ % opts.channels.length);
        if (opts.sync) await p;
      }
    }
    while (this.inFlight > 0) await new Promise<void>((r) => this.waiters.push(r));
    await this.pub.flush().catch((e: unknown) => this.noteError(e));
    await this.sendEndMarkers();
    const final: FromPubWorker = {
      type: "final",
      index: this.index,
      counts: { ...this.counts },
      window: this.window.toJSON(),
      cpuPct: this.cpu.sample(),
      firstSendMs: this.firstSendMs,
      lastDoneMs: this.lastDoneMs,
      firstError: this.firstError,
    };
    await this.pub.close().catch(() => undefined);
    return final;
  }

  private publishOne(ci: number): Promise<void> {
    const s = ++this.seqs[ci]!;
    const id = this.ids[ci]!;
    const t = nowUs();
    if (this.firstSendMs === 0) this.firstSendMs = t / 1000;
    const body = dataPayload(id, s, t, this.opts.size, this.clockOffsetUs);
    this.counts.sent++;
    this.inFlight++;
    const started = performance.now();
    return this.pub.publish(this.opts.channels[ci]!, body, this.opts.msgId ? `${id}:${s}` : undefined).then(
      () => {
        this.counts.acked++;
        if (this.pub.acks) this.window.record((performance.now() - started) * 1000);
        this.settled();
      },
      (err: unknown) => {
        this.counts.failed++;
        this.noteError(err);
        this.settled();
      },
    );
  }

  private settled(): void {
    this.inFlight--;
    this.lastDoneMs = nowUs() / 1000;
    const w = this.waiters.shift();
    w?.();
  }

  private noteError(err: unknown): void {
    this.firstError ??= err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  }

  private async sendEndMarkers(): Promise<void> {
    for (let ci = 0; ci < this.opts.channels.length; ci++) {
      const body = endPayload(this.ids[ci]!, this.seqs[ci]!);
      let ok = false;
      for (let a = 0; a < END_MARKER_ATTEMPTS && !ok; a++) {
        try {
          await this.pub.publish(this.opts.channels[ci]!, body, this.opts.msgId ? `${this.ids[ci]}:end` : undefined);
          ok = true;
        } catch (e) {
          this.noteError(e);
        }
      }
      if (ok) this.counts.endMarkers++;
      else this.counts.endMarkersFailed++;
    }
    await this.pub.flush().catch((e: unknown) => this.noteError(e));
  }
}

/** Entry point of a forked pub-cluster process. */
export function runPubWorker(): void {
  let worker: PubWorker | null = null;
  process.on("SIGINT", () => undefined);
  process.on("disconnect", () => process.exit(0));
  process.on("message", (m: ToPubWorker) => {
    if (m.type === "start" && !worker) {
      const w = new PubWorker(m.index, m.opts, m.clockOffsetUs);
      worker = w;
      const ticker = setInterval(() => process.send?.(w.tick()), 1000);
      w.run().then(
        (final) => {
          clearInterval(ticker);
          process.send?.(final, () => process.exit(0));
        },
        (err: unknown) => {
          clearInterval(ticker);
          console.error(`pub-${m.index + 1}: ${err instanceof Error ? err.message : String(err)}`);
          process.exit(1);
        },
      );
    } else if (m.type === "stop") {
      worker?.stop();
    }
  });
}
