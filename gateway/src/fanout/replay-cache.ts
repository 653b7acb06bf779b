import type { ReplayApi, StoredPage } from "../broker/broker.js";
import type { Codec, MsgFrames } from "../protocol/codec.js";
import type { StoredMsg } from "../protocol/server-frames.js";
import type { StoredPublisher } from "../protocol/publisher-info.js";
import type { StoredTags } from "../protocol/tags.js";
import { JSON_CODEC } from "../protocol/codecs.js";
import { buildFrames } from "../protocol/serialize.js";
import { COALESCE_MAX_BYTES, runEnds } from "./coalesced-frames.js";
import type { HandoffItem, HandoffPage } from "./handoff.js";
import { StreamSweep, SWEEP_PATTERNS } from "./sweep.js";

/**
 * A page of stored messages of one pattern, shared by every socket catching up that pattern. Its JSON frames
 * are built as it arrives, as before there were codecs (most sockets speak JSON, and the reader may still be
 * waiting for its socket to drain). Another codec's frames are built for the whole page when a socket of
 * that codec first reads it, from the payloads the JSON frames hold (a JSON payload is spliced in as it is)
 * or a copy of the rare other one: the page keeps no view of the buffer its messages were read into.
 *
 * For the sockets that read coalesced frames (PROTOCOL.md "Coalesced frames"), a codec's frames are split
 * into runs of at most `maxBytes` once, and each run's coalesced frame is built when a socket first writes
 * the whole run, then shared like the single frames.
 */
export class FramePage implements HandoffPage<MsgFrames> {
  readonly items: readonly HandoffItem<MsgFrames>[];
  /** About what the page holds: its frames, and a record per message. */
  bytes = 64;
  private readonly built: (readonly Uint8Array[] | undefined)[] = [];
  private readonly runs: (Runs | undefined)[] = [];
  private readonly msgs: readonly PageMsg[];

  constructor(
    readonly pattern: string,
    readonly from: number,
    readonly coverEnd: number,
    stored: readonly StoredMsg[],
    /** Told the bytes the page grew by when another codec's frames were built. */
    private readonly grew: (page: FramePage, bytes: number) => void,
    /** A coalesced frame's bytes at most (the live frame window's bound). */
    private readonly maxBytes = COALESCE_MAX_BYTES,
  ) {
    const verbatim: boolean[] = [];
    const json = buildFrames(pattern, stored, verbatim);
    this.built[JSON_CODEC.slot] = json;
    const items: HandoffItem<MsgFrames>[] = new Array(stored.length);
    const msgs: PageMsg[] = new Array(stored.length);
    for (const [i, m] of stored.entries()) {
      const frame = json[i] as Buffer;
      this.bytes += frame.length + 48;
      const p = new PageMsg(this, i, m, verbatim[i] === true ? undefined : Uint8Array.prototype.slice.call(m.payload));
      msgs[i] = p;
      items[i] = { seq: m.seq, frame: p };
    }
    this.msgs = msgs;
    this.items = items;
  }

  /** The frames of every message of the page in `codec`, built on first use. */
  framesOf(codec: Codec): readonly Uint8Array[] {
    let f = this.built[codec.slot];
    if (f) return f;
    const json = this.built[JSON_CODEC.slot] as readonly Uint8Array[];
    f = codec.msgs(
      this.pattern,
      this.msgs.map((p, i) => p.stored(json[i] as Uint8Array)),
    );
    if (f.length !== this.msgs.length) throw new Error(`${this.pattern}: ${f.length} frames for ${this.msgs.length} messages`);
    this.built[codec.slot] = f;
    let n = 0;
    for (const x of f) n += x.length;
    this.bytes += n;
    this.grew(this, n);
    return f;
  }

  /**
   * The coalesced frame of `codec` that starts with message `i` and ends at its run's end or before `limit`,
   * whichever comes first, and the index after its last message. A whole run's frame is built once and kept;
   * a part of one (a socket that resumes inside a run, or must stop before its end) is joined for the caller
   * alone; one message is its own `msg` frame.
   */
  coalesced(codec: Codec, i: number, limit: number): { frame: Uint8Array; end: number } {
    const frames = this.framesOf(codec);
    const runs = (this.runs[codec.slot] ??= splitRuns(frames, this.maxBytes));
    const k = runs.runOf[i] as number;
    const runStart = k === 0 ? 0 : (runs.ends[k - 1] as number);
    const runEnd = runs.ends[k] as number;
    const end = Math.min(runEnd, limit);
    if (end - i === 1) return { frame: frames[i] as Uint8Array, end };
    if (i !== runStart || end !== runEnd) return { frame: codec.batch(frames.slice(i, end)), end };
    let f = runs.frames[k];
    if (!f) {
      f = runs.frames[k] = codec.batch(frames.slice(i, end));
      this.bytes += f.length;
      this.grew(this, f.length);
    }
    return { frame: f, end };
  }
}

/** A codec's frames of a page as coalesced runs: where each run ends, each message's run, the runs' frames once built. */
type Runs = { ends: number[]; runOf: Uint32Array; frames: (Uint8Array | undefined)[] };

function splitRuns(frames: readonly Uint8Array[], maxBytes: number): Runs {
  const ends = runEnds(frames, maxBytes);
  const runOf = new Uint32Array(frames.length);
  let k = 0;
  for (let i = 0; i < frames.length; i++) {
    if (i >= (ends[k] as number)) k++;
    runOf[i] = k;
  }
  return { ends, runOf, frames: [] };
}

/** One message of a page, as a handoff item's frames. */
class PageMsg implements MsgFrames {
  private readonly channel: string;
  private readonly ts: number;
  private readonly seq: number;
  private readonly length: number;
  private readonly type: string | undefined;
  private readonly publisher: StoredPublisher | undefined;
  private readonly tags: StoredTags | undefined;

  constructor(
    private readonly page: FramePage,
    private readonly i: number,
    m: StoredMsg,
    /** The payload, when the JSON frame does not hold it as it is. */
    private readonly copy: Uint8Array | undefined,
  ) {
    this.channel = m.channel;
    this.ts = m.ts;
    this.seq = m.seq;
    this.length = m.payload.length;
    this.type = m.type;
    this.publisher = m.publisher;
    this.tags = m.tags;
  }

  get size(): number {
    return this.length + 96;
  }

  frame(codec: Codec): Uint8Array {
    return this.page.framesOf(codec)[this.i] as Uint8Array;
  }

  /** The stored message again, its payload from `json` (its JSON frame) or the copy. */
  stored(json: Uint8Array): StoredMsg {
    const payload = this.copy ?? json.subarray(json.length - 1 - this.length, json.length - 1);
    const m: StoredMsg = { channel: this.channel, seq: this.seq, ts: this.ts, payload, type: this.type };
    if (this.publisher !== undefined) m.publisher = this.publisher;
    if (this.tags !== undefined) m.tags = this.tags;
    return m;
  }
}

/** A page being read: `end` (its coverEnd) is known as soon as the stored messages arrive, before the frames are built. */
type Inflight = { from: number; end: Promise<PageEnd>; page: Promise<FramePage> };

/** Where a page starts and ends, and how many messages it holds. */
export type PageEnd = { from: number; coverEnd: number; count: number };

/** Called with a page's coverEnd as soon as it is known, so that the next page can be asked for at once. */
export type OnPageEnd = (page: PageEnd) => void;

/** What catch-ups read pages through (the hub's `pages`): the cache without its housekeeping. */
export interface PageSource {
  get(pattern: string, from: number, target: number, onEnd?: OnPageEnd): Promise<FramePage>;
  prefetch(pattern: string, from: number, target: number): void;
  stats(): ReplayCacheStats;
}

export type ReplayCacheStats = { pages: number; bytes: number; fetches: number; hits: number; sweepPages: number };

/**
 * Shared reading for catch-ups. Sockets resuming the same pattern from nearby positions ask for the same
 * pages; each page is read from the stream once (a request for a position another request is already
 * reading from waits for it) and its frames are built once. Pages are kept, least recently used first
 * out, up to `maxBytes`: 10,000 sockets resuming one channel read the stream once, not 10,000 times.
 * While `SWEEP_PATTERNS` or more patterns are being read, further reads join one pass over the stream
 * (`StreamSweep`): 1,000 channels resuming at once read the range once, not 1,000 times.
 */
export class ReplayCache implements PageSource {
  private readonly byPattern = new Map<string, FramePage[]>();
  /** Insertion order = least recently used first. */
  private readonly lru = new Set<FramePage>();
  private readonly inflight = new Map<string, Inflight[]>();
  private bytes = 0;
  private fetches = 0;
  private hits = 0;
  /** One shared pass per stream (the default one, each namespace's): a pass reads one stream's sequences. */
  private readonly sweeps = new Map<string, StreamSweep>();

  constructor(
    private readonly replay: ReplayApi,
    private readonly maxBytes: number,
    private readonly sweepPatterns = SWEEP_PATTERNS,
    /** A coalesced frame's bytes at most (the hub's `CoalescePolicy.maxBytes`). */
    private readonly coalesceMaxBytes = COALESCE_MAX_BYTES,
  ) {}

  /** The pass over the stream of `pattern` (created on first use). */
  private sweepOf(pattern: string): StreamSweep {
    const scope = this.replay.streamOf?.(pattern);
    const key = scope?.name ?? "";
    let s = this.sweeps.get(key);
    if (!s) this.sweeps.set(key, (s = new StreamSweep(this.replay, scope)));
    return s;
  }

  private get sweepActive(): boolean {
    for (const s of this.sweeps.values()) if (s.active) return true;
    return false;
  }

  stats(): ReplayCacheStats {
    return {
      pages: this.lru.size,
      bytes: this.bytes,
      fetches: this.fetches,
      hits: this.hits,
      sweepPages: [...this.sweeps.values()].reduce((n, s) => n + s.pages, 0),
    };
  }

  /**
   * The page of `pattern` that holds `from` (read with `target` when it must be read). `onEnd` learns where
   * that page ends as soon as the stored messages arrive — before its frames are built and long before the
   * socket has taken them — so the caller can have the next page read meanwhile: the server then never
   * waits for the worker between two pages.
   */
  async get(pattern: string, from: number, target: number, onEnd?: OnPageEnd): Promise<FramePage> {
    for (let i = 0; i < 3; i++) {
      const hit = this.find(pattern, from);
      if (hit) {
        this.hits++;
        onEnd?.({ from: hit.from, coverEnd: hit.coverEnd, count: hit.items.length });
        return hit;
      }
      const pending = this.inflight.get(pattern)?.find((f) => f.from <= from);
      if (!pending) break;
      if (onEnd)
        pending.end.then(
          (end) => (from <= end.coverEnd ? onEnd(end) : undefined),
          () => undefined,
        );
      const p = await pending.page.catch(() => undefined);
      if (p && p.from <= from && from <= p.coverEnd) return p;
    }
    const f = this.fetch(pattern, from, target);
    if (onEnd) f.end.then(onEnd, () => undefined);
    return f.page;
  }

  /** Reads ahead: has the page at `from` read, unless it is cached or being read. */
  prefetch(pattern: string, from: number, target: number): void {
    if (this.find(pattern, from) || this.inflight.get(pattern)?.some((f) => f.from === from)) return;
    this.fetch(pattern, from, target);
  }

  private find(pattern: string, from: number): FramePage | undefined {
    const pages = this.byPattern.get(pattern);
    if (!pages) return undefined;
    for (const p of pages) {
      if (p.from <= from && from <= p.coverEnd) {
        this.lru.delete(p);
        this.lru.add(p);
        return p;
      }
    }
    return undefined;
  }

  private fetch(pattern: string, from: number, target: number): Inflight {
    this.fetches++;
    // Counted before this pattern joins the reads in flight.
    const viaSweep = this.sweepActive || this.inflight.size >= this.sweepPatterns;
    const stored = viaSweep ? this.sweepOf(pattern).read(pattern, from, target) : this.replay.read(pattern, from, target);
    const f: Inflight = {
      from,
      end: stored.then((s) => ({ from, coverEnd: s.coverEnd, count: s.messages.length })),
      page: stored.then((s) => this.toPage(pattern, from, s)),
    };
    f.end.catch(() => undefined);
    const list = this.inflight.get(pattern) ?? [];
    list.push(f);
    this.inflight.set(pattern, list);
    const done = (): void => {
      const l = this.inflight.get(pattern);
      if (!l) return;
      const i = l.indexOf(f);
      if (i >= 0) l.splice(i, 1);
      if (l.length === 0) this.inflight.delete(pattern);
    };
    f.page.then(done, done);
    return f;
  }

  private toPage(pattern: string, from: number, stored: StoredPage): FramePage {
    const page = new FramePage(
      pattern,
      from,
      stored.coverEnd,
      stored.messages,
      (p, n) => {
        if (this.lru.has(p)) this.bytes += n;
      },
      this.coalesceMaxBytes,
    );
    this.insert(page);
    return page;
  }

  private insert(page: FramePage): void {
    const pages = this.byPattern.get(page.pattern) ?? [];
    pages.push(page);
    this.byPattern.set(page.pattern, pages);
    this.lru.add(page);
    this.bytes += page.bytes;
    while (this.bytes > this.maxBytes && this.lru.size > 1) {
      const oldest = this.lru.values().next().value as FramePage;
      this.evict(oldest);
    }
  }

  private evict(p: FramePage): void {
    this.lru.delete(p);
    this.bytes -= p.bytes;
    const pages = this.byPattern.get(p.pattern);
    if (!pages) return;
    const i = pages.indexOf(p);
    if (i >= 0) pages.splice(i, 1);
    if (pages.length === 0) this.byPattern.delete(p.pattern);
  }

  /**
   * Drops the pages of one stream's patterns (it was recreated: its sequences mean other messages now), or
   * every page when the broker has one stream.
   */
  clearStream(stream: string): void {
    const streamOf = this.replay.streamOf?.bind(this.replay);
    for (const pattern of [...this.byPattern.keys()]) {
      let of: string | undefined;
      try {
        of = streamOf?.(pattern).name;
      } catch {
        of = undefined;
      }
      if (of === undefined || of === stream) this.forget(pattern);
    }
  }

  /** Drops every page of a pattern (its feed stopped: nobody resumes it soon). */
  forget(pattern: string): void {
    for (const p of this.byPattern.get(pattern) ?? []) {
      this.lru.delete(p);
      this.bytes -= p.bytes;
    }
    this.byPattern.delete(pattern);
  }
}
