import type { Codec } from "../protocol/codec.js";
import type { NamespaceRoutes } from "../namespaces/routing.js";

/** Where a frame window's frames go: the feed's coalesced topic of `codec` (uWS writes it to every socket on it). */
export type CoalescedOut = (codec: Codec, frame: Uint8Array) => void;

/** A one-shot timer (setTimeout in the gateway; tests pass their own clock). */
export type Schedule = (fn: () => void, ms: number) => { cancel(): void };

export const scheduleTimeout: Schedule = (fn, ms) => {
  const t = setTimeout(fn, ms);
  t.unref();
  return { cancel: () => clearTimeout(t) };
};

/**
 * The `msg` frames of one feed held for its coalesced topics during a window, per codec, and sent as one
 * frame per codec (`Codec.batch`) when the window ends, when the next frame would pass `maxBytes`, or when
 * the feed asks (`flush`, before a socket joins or leaves its topics: nothing held may reach a socket that
 * joined after it, or be lost by one that leaves after it). Frames are built once per message per worker
 * (the hub's), joined once per window per codec, never per socket. Order is kept: frames go out in the
 * order they were added, and one that is alone over `maxBytes` goes after what was held before it.
 */
export class FrameWindow {
  private readonly held: Uint8Array[][] = [];
  private readonly heldBytes: number[] = [];
  private readonly codecs: Codec[] = [];
  private timer?: { cancel(): void };

  constructor(
    readonly windowMs: number,
    private readonly maxBytes: number,
    private readonly out: CoalescedOut,
    private readonly schedule: Schedule = scheduleTimeout,
  ) {}

  /** True when frames wait for the window's end. */
  get holding(): boolean {
    return this.timer !== undefined;
  }

  add(codec: Codec, frame: Uint8Array): void {
    const slot = codec.slot;
    if ((this.heldBytes[slot] ?? 0) + frame.length + 1 > this.maxBytes) this.flushCodec(slot);
    if (frame.length >= this.maxBytes) return this.out(codec, frame);
    const list = this.held[slot];
    if (!list) {
      this.held[slot] = [frame];
      this.codecs[slot] = codec;
    } else list.push(frame);
    this.heldBytes[slot] = (this.heldBytes[slot] ?? 0) + frame.length + 1;
    this.timer ??= this.schedule(() => {
      this.timer = undefined;
      this.flush();
    }, this.windowMs);
  }

  /** Sends everything held now, each codec's frames as one frame. */
  flush(): void {
    if (this.timer) {
      this.timer.cancel();
      this.timer = undefined;
    }
    for (let slot = 0; slot < this.held.length; slot++) this.flushCodec(slot);
  }

  /** Drops what is held (the feed stopped: nobody listens). */
  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
    this.held.length = 0;
    this.heldBytes.length = 0;
  }

  private flushCodec(slot: number): void {
    const list = this.held[slot];
    if (!list || list.length === 0) return;
    this.held[slot] = [];
    this.heldBytes[slot] = 0;
    const codec = this.codecs[slot] as Codec;
    this.out(codec, list.length === 1 ? (list[0] as Uint8Array) : codec.batch(list));
  }
}

/** The largest coalesced frame without a backpressure threshold to bound it. */
export const COALESCE_MAX_BYTES = 65_536;

/** The largest coalesced frame: 64 KiB, or a quarter of the backpressure threshold if that is less. */
export const coalesceMaxBytes = (backpressureBytes: number): number => Math.min(COALESCE_MAX_BYTES, Math.floor(backpressureBytes / 4));

/**
 * Where the coalesced frames of frames already all there (a catch-up page's) end, by the `FrameWindow`'s rule:
 * a run closes before the frame that would make its frames and their separators pass `maxBytes`, and a frame
 * of `maxBytes` or more goes alone. `ends[k]` is the index after run k's last frame.
 */
export function runEnds(frames: readonly Uint8Array[], maxBytes: number): number[] {
  const ends: number[] = [];
  let bytes = 0;
  for (const [i, f] of frames.entries()) {
    if (bytes > 0 && (bytes + f.length + 1 > maxBytes || f.length >= maxBytes)) {
      ends.push(i);
      bytes = 0;
    }
    bytes += f.length + 1;
  }
  if (frames.length > 0) ends.push(frames.length);
  return ends;
}

/**
 * A pattern's window: its namespace's `coalesce`, else COALESCE (`defaultMs`); a pattern spanning several
 * streams takes COALESCE.
 */
export function windowOf(namespaces: NamespaceRoutes<{ name: string; tokens: readonly string[]; coalesceMs?: number }>, defaultMs: number) {
  return (pattern: string): number => {
    const r = namespaces.ofPattern(pattern);
    return r.kind === "namespace" ? (r.ns.coalesceMs ?? defaultMs) : defaultMs;
  };
}
