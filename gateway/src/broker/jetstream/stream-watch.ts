import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import type { PresenceSection, StreamSection } from "../../config/sections.js";
import type { Logger } from "../../log.js";
import { desiredPresenceBucket, ensurePresenceBucket } from "./presence.js";
import { desiredStream, ensureStream } from "./stream.js";

/**
 * What of the stream's (and the presence bucket's) own setup has drifted from what the gateway relies on.
 * Each one loses or stales something without an error anywhere: without the republish rule publishes are
 * stored and answered but reach no live subscriber; without direct gets replay and repairs fail; a deleted
 * stream takes every feed with it; a deleted bucket leaves member lists stale.
 */
export type Drift = "stream_missing" | "republish_changed" | "allow_direct_off" | "subjects_changed" | "bucket_missing" | "bucket_republish_changed";

/** The drifts of the stream `existing` (undefined: not found) against the gateway's `wanted` one; pure. */
export function streamDrift(existing: StreamConfig | undefined, wanted: Partial<StreamConfig>): Drift[] {
  if (!existing) return ["stream_missing"];
  const out: Drift[] = [];
  if (JSON.stringify(existing.republish ?? null) !== JSON.stringify(wanted.republish ?? null)) out.push("republish_changed");
  if (wanted.allow_direct && !existing.allow_direct) out.push("allow_direct_off");
  if (JSON.stringify(existing.subjects) !== JSON.stringify(wanted.subjects)) out.push("subjects_changed");
  return out;
}

/** The drifts of the presence bucket's stream; pure. */
export function bucketDrift(existing: StreamConfig | undefined, wanted: Partial<StreamConfig>): Drift[] {
  if (!existing) return ["bucket_missing"];
  return JSON.stringify(existing.republish ?? null) !== JSON.stringify(wanted.republish ?? null) ? ["bucket_republish_changed"] : [];
}

export type StreamWatchOptions = {
  /** Put back what drifted (true), or only report it. */
  repair: boolean;
  intervalMs: number;
  /** Told of every change of the drift set (the workers answer /readyz and the metric from it). */
  onChange: (drift: readonly Drift[]) => void;
};

/**
 * The one owner of the stream's setup after start (the primary: workers would race each other's repairs):
 * looks at the stream and the presence bucket every `intervalMs`, logs each change of what drifted once, and
 * repairs what the gateway owns — the republish rule, direct gets and the subjects by a stream update, a
 * deleted stream or bucket by creating it again (its new epoch makes the workers close their sockets with
 * 1012, and resuming clients get `epochChanged`). Repairs are the start-up code's, so both want one setup.
 */
export class StreamWatch {
  private drift: readonly Drift[] = [];
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly stream: StreamSection,
    private readonly presence: PresenceSection | undefined,
    private readonly log: Logger,
    private readonly opts: StreamWatchOptions,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => void this.check(), this.opts.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One look (and repair); concurrent calls share it. */
  check(): Promise<void> {
    this.running ??= this.checkOnce().finally(() => (this.running = undefined));
    return this.running;
  }

  private async look(): Promise<Drift[]> {
    const wanted = desiredStream(this.stream);
    const out = streamDrift(await this.config(wanted.name), wanted);
    if (this.presence) {
      const bucket = desiredPresenceBucket(this.presence);
      out.push(...bucketDrift(await this.config(bucket.name), bucket));
    }
    return out;
  }

  private async checkOnce(): Promise<void> {
    let drift: Drift[];
    try {
      drift = await this.look();
      if (drift.length > 0 && this.opts.repair) {
        await this.repair(drift);
        const left = await this.look();
        this.log.warn({ stream: this.stream.name, drift, left }, left.length ? "stream setup repair incomplete" : "stream setup drifted and was repaired");
        drift = left;
      }
    } catch (e) {
      this.log.warn({ err: e, stream: this.stream.name }, "stream setup check failed");
      return;
    }
    if (JSON.stringify(drift) === JSON.stringify(this.drift)) return;
    if (drift.length > 0)
      this.log.error(
        { stream: this.stream.name, drift, repair: this.opts.repair },
        "the stream's setup drifted: live delivery, replay or presence are affected until it is put back (STREAM_REPAIR=repair does it)",
      );
    else this.log.info({ stream: this.stream.name }, "the stream's setup is as the gateway wants it again");
    this.drift = drift;
    this.opts.onChange(drift);
  }

  private async repair(drift: readonly Drift[]): Promise<void> {
    const wanted = desiredStream(this.stream);
    if (drift.includes("stream_missing")) await ensureStream(this.jsm, this.stream, this.log);
    else if (drift.some((d) => d === "republish_changed" || d === "allow_direct_off" || d === "subjects_changed")) {
      const info = await this.jsm.streams.info(wanted.name);
      await this.jsm.streams.update(wanted.name, { ...info.config, republish: wanted.republish, allow_direct: true, subjects: wanted.subjects });
    }
    if (this.presence && drift.some((d) => d === "bucket_missing" || d === "bucket_republish_changed"))
      await ensurePresenceBucket(this.jsm, this.presence, this.log, 1);
  }

  private async config(name: string): Promise<StreamConfig | undefined> {
    try {
      return (await this.jsm.streams.info(name)).config;
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound) return undefined;
      throw e;
    }
  }
}
