import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager, type StreamConfig } from "@nats-io/jetstream";
import type { PresenceSection, StreamSection } from "../../config/sections/index.js";
import type { Logger } from "../../log.js";
import { desiredPresenceBucket, ensurePresenceBucket } from "./presence.js";
import { desiredStream, ensureStream } from "./stream.js";
import { ensureOwnStream, ownStreamDrift, type OwnStream } from "./own-stream.js";

/**
 * What of the stream's (and the presence bucket's) own setup has drifted from what the gateway relies on.
 * Each one loses or stales something without an error anywhere: without the republish rule publishes are
 * stored and answered but reach no live subscriber; without direct gets replay and repairs fail; a deleted
 * stream takes every feed with it; a deleted bucket leaves member lists stale.
 */
export type Drift =
  | "stream_missing"
  | "republish_changed"
  | "allow_direct_off"
  | "subjects_changed"
  | "bucket_missing"
  | "bucket_republish_changed"
  /**
   * Regions: the stream lives in another region than HOME_REGION says, as after a promotion (docs/operations.md
   * "Failover"). Nothing of it is repaired: its republish rule is the new home's, which this gateway's
   * settings would undo. Gone once the gateway runs with HOME_REGION set to where the stream is.
   */
  | "home_region_moved"
  /** The events feature's streams (events stream, webhook lease, state bucket): gone, or a setting the gateway keeps changed. */
  | ReturnType<typeof ownStreamDrift>[number];

/** The drifts of the stream `existing` (undefined: not found) against the gateway's `wanted` one; pure. */
export function streamDrift(existing: StreamConfig | undefined, wanted: Partial<StreamConfig>): Drift[] {
  if (!existing) return ["stream_missing"];
  if (wanted.placement && existing.placement?.cluster !== wanted.placement.cluster) return ["home_region_moved"];
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
  /** The gateway's own bookkeeping streams to keep as well (the events feature's: events-broker.ts `owned()`). */
  own?: readonly OwnStream[];
};

type Look = { streams: Map<StreamSection, Drift[]>; bucket: Drift[]; own: Map<OwnStream, Drift[]> };

/**
 * The one owner of the stream's setup after start (the primary: workers would race each other's repairs):
 * looks at the stream, the presence bucket and the events feature's streams every `intervalMs`, logs each change of what drifted once, and
 * repairs what the gateway owns — the republish rule, direct gets and the subjects by a stream update, the
 * events feature's kept settings (own-stream.ts) the same way, a deleted stream or bucket by creating it again (its new epoch makes the workers close their sockets with
 * 1012, and resuming clients get `epochChanged`). Repairs are the start-up code's, so both want one setup.
 */
export class StreamWatch {
  private drift: readonly Drift[] = [];
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  /** The default stream first, then every namespace's: each is looked at and repaired on its own. */
  private readonly streams: readonly StreamSection[];

  constructor(
    private readonly jsm: JetStreamManager,
    stream: StreamSection | readonly StreamSection[],
    private readonly presence: PresenceSection | undefined,
    private readonly log: Logger,
    private readonly opts: StreamWatchOptions,
  ) {
    this.streams = Array.isArray(stream) ? stream : [stream as StreamSection];
  }

  private get names(): string[] {
    return [...this.streams.map((s) => s.name), ...(this.opts.own ?? []).map((o) => o.wanted.name)];
  }

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

  /** The drifts of each stream, of the bucket, and of each own stream. */
  private async lookEach(): Promise<Look> {
    const streams = new Map<StreamSection, Drift[]>();
    for (const s of this.streams) {
      const wanted = desiredStream(s);
      const d = streamDrift(await this.config(wanted.name), wanted);
      if (d.length > 0) streams.set(s, d);
    }
    let bucket: Drift[] = [];
    if (this.presence) {
      const b = desiredPresenceBucket(this.presence);
      bucket = bucketDrift(await this.config(b.name), b);
    }
    const own = new Map<OwnStream, Drift[]>();
    for (const o of this.opts.own ?? []) {
      const d = ownStreamDrift(await this.config(o.wanted.name), o);
      if (d.length > 0) own.set(o, d);
    }
    return { streams, bucket, own };
  }

  /** Every kind of drift found, once (the metric and /readyz name kinds; the log names the streams). */
  private static kinds(each: Look): Drift[] {
    return [...new Set([...[...each.streams.values()].flat(), ...each.bucket, ...[...each.own.values()].flat()])];
  }

  private async checkOnce(): Promise<void> {
    let drift: Drift[];
    try {
      const each = await this.lookEach();
      drift = StreamWatch.kinds(each);
      if (drift.length > 0 && this.opts.repair) {
        await this.repair(each);
        const left = StreamWatch.kinds(await this.lookEach());
        const drifted = [...[...each.streams.keys()].map((s) => s.name), ...[...each.own.keys()].map((o) => o.wanted.name)];
        this.log.warn({ streams: drifted, drift, left }, left.length ? "stream setup repair incomplete" : "stream setup drifted and was repaired");
        drift = left;
      }
    } catch (e) {
      this.log.warn({ err: e, streams: this.names }, "stream setup check failed");
      return;
    }
    if (JSON.stringify(drift) === JSON.stringify(this.drift)) return;
    if (drift.length > 0)
      this.log.error(
        { streams: this.names, drift, repair: this.opts.repair },
        "the stream's setup drifted: live delivery, replay, presence or events are affected until it is put back (STREAM_REPAIR=repair does it)",
      );
    else this.log.info({ streams: this.names }, "the stream's setup is as the gateway wants it again");
    this.drift = drift;
    this.opts.onChange(drift);
  }

  private async repair(each: Look): Promise<void> {
    for (const [stream, drift] of each.streams) {
      const wanted = desiredStream(stream);
      if (drift.includes("home_region_moved")) continue;
      if (drift.includes("stream_missing")) await ensureStream(this.jsm, stream, this.log);
      else if (drift.some((d) => d === "republish_changed" || d === "allow_direct_off" || d === "subjects_changed")) {
        const info = await this.jsm.streams.info(wanted.name);
        await this.jsm.streams.update(wanted.name, { ...info.config, republish: wanted.republish, allow_direct: true, subjects: wanted.subjects });
      }
    }
    if (this.presence && each.bucket.length > 0) await ensurePresenceBucket(this.jsm, this.presence, this.log, 1);
    for (const [o, drift] of each.own) {
      await ensureOwnStream(this.jsm, o.wanted, o.fields, this.log, o.what);
      if (drift.some((d) => d.endsWith("_missing"))) await o.restore?.();
    }
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
