import { DeltaBases } from "./deltas.js";
import type { GatewayError } from "./errors.js";
import type { GatewayEvent } from "./events.js";
import type { Frame, MessageHandler, SubscribeInfo, SubscribeOptions, Subscription } from "./types.js";

/** Channels whose last seq a subscription remembers for its duplicate check. */
export const MAX_TRACKED_CHANNELS = 10_000;

/** A subscription's bookkeeping: where it resumes from, and what it delivered (for the duplicate check). */
export type Sub = Subscription & {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- handlers of any message type live in one map
  handler: MessageHandler<any>;
  opts: SubscribeOptions;
  lastSeq: number;
  /** Epoch of the stream `lastSeq` belongs to (from the server's ok). */
  epoch?: string;
  /** Last seq per channel (bounded), and the seq at or below which a forgotten channel's messages are old. */
  lastByChannel: Map<string, number>;
  floor: number;
  closed: boolean;
  /** A server-side subscription (announced by the server, not asked for by `subscribe()`). */
  auto?: boolean;
  /** A resubscribe is waiting for its ok: frames of the server-side subscription it takes over are dropped. */
  resuming?: boolean;
  client?: string;
  /** A `delta: "fossil"` subscription's bases per channel. */
  deltas?: DeltaBases;
  settle?: { resolve: (i: SubscribeInfo) => void; reject: (e: GatewayError) => void };
};

/**
 * A `subscribe()`'s record. When it takes over a server-side subscription (`auto`) of the same pattern, it
 * goes on where that one is: its last seqs and epoch (a durable starts afresh).
 */
export function newSub(
  channel: string,
  handler: MessageHandler<unknown>,
  options: SubscribeOptions,
  ready: { promise: Promise<SubscribeInfo>; resolve: (i: SubscribeInfo) => void; reject: (e: GatewayError) => void },
  unsubscribe: (sub: Sub) => void,
  auto?: Sub,
): Sub {
  const sub: Sub = {
    channel,
    handler,
    opts: { ...options, autoAck: options.autoAck ?? options.ack === true },
    lastSeq: auto && options.durable === undefined ? auto.lastSeq : 0,
    epoch: auto?.epoch,
    lastByChannel: auto && options.durable === undefined ? auto.lastByChannel : new Map(),
    floor: auto?.floor ?? 0,
    closed: false,
    ready: ready.promise,
    settle: { resolve: ready.resolve, reject: ready.reject },
    unsubscribe: () => unsubscribe(sub),
  };
  if (options.delta === "fossil" && options.durable === undefined) sub.deltas = new DeltaBases();
  return sub;
}

/** The record of a server-side subscription, from the server's `{"op":"sub","auto":true}` frame. */
export function autoSub(f: Frame, handler: MessageHandler<unknown>, unsubscribe: (sub: Sub) => void): Sub {
  const seq = typeof f.seq === "number" ? f.seq : 0;
  const sub: Sub = {
    channel: String(f.channel),
    handler,
    opts: {},
    lastSeq: seq,
    lastByChannel: new Map(),
    floor: seq,
    closed: false,
    auto: true,
    ready: Promise.resolve({ lastSeq: seq, ...(typeof f.epoch === "string" ? { epoch: f.epoch } : {}) }),
    unsubscribe: () => unsubscribe(sub),
  };
  if (typeof f.epoch === "string") sub.epoch = f.epoch;
  return sub;
}

/**
 * The `sub` frame that (re)starts `sub`: after a delivered message (or for a server-side subscription) it
 * resumes from the next seq with the epoch it belongs to; before, it asks for the original `from`.
 * `expectedSeq` is the seq a gap would be measured from.
 */
export function subscribeFrame(sub: Sub): { frame: Record<string, unknown>; expectedSeq?: number } {
  const frame: Record<string, unknown> = { op: "sub", channel: sub.channel };
  let expectedSeq: number | undefined;
  if (sub.opts.durable !== undefined) {
    frame.durable = sub.opts.durable;
    if (sub.opts.ack) frame.ack = true;
    if (sub.opts.maxInflight !== undefined) frame.maxInflight = sub.opts.maxInflight;
  } else {
    if (sub.opts.presence) frame.presence = sub.opts.presence;
    if (sub.deltas) frame.delta = "fossil";
    if (sub.opts.presence && sub.opts.presence !== "watch" && sub.opts.info !== undefined) frame.info = sub.opts.info;
    // The epoch names the stream the seq belongs to: a recreated stream is reported, not misread.
    const from = sub.lastSeq > 0 || sub.auto ? { seq: sub.lastSeq + 1, ...(sub.epoch ? { epoch: sub.epoch } : {}) } : sub.opts.from;
    if (from !== undefined) frame.from = typeof from === "object" && "time" in from ? { time: new Date(from.time).toISOString() } : from;
    if (typeof from === "object" && "seq" in from) expectedSeq = from.seq;
  }
  return expectedSeq === undefined ? { frame } : { frame, expectedSeq };
}

/**
 * Takes the server's `ok` to a subscribe into `sub`: a recreated stream (`epochChanged`) starts the seqs over,
 * the epoch is remembered. Returns what `ready` resolves with, and the `gap` to report when the resume point
 * is gone.
 */
export function acceptOk(sub: Sub, reply: Frame, expectedSeq: number | undefined): { info: SubscribeInfo; gap?: GatewayEvent } {
  if (reply.epochChanged === true) {
    sub.lastSeq = 0;
    sub.floor = 0;
    sub.lastByChannel.clear();
  }
  if (typeof reply.epoch === "string") sub.epoch = reply.epoch;
  let gap: GatewayEvent | undefined;
  if (reply.truncated === true && expectedSeq !== undefined) {
    gap = {
      type: "gap",
      channel: sub.channel,
      expectedSeq,
      firstSeq: Number(reply.firstSeq),
      ...(reply.epochChanged === true ? { epochChanged: true } : {}),
    };
  }
  const info: SubscribeInfo = {};
  if (typeof reply.epoch === "string") info.epoch = reply.epoch;
  if (reply.epochChanged === true) info.epochChanged = true;
  if (typeof reply.firstSeq === "number") info.firstSeq = reply.firstSeq;
  if (typeof reply.lastSeq === "number") info.lastSeq = reply.lastSeq;
  if (reply.truncated === true) info.truncated = true;
  if (typeof reply.client === "string") info.client = sub.client = reply.client;
  return gap ? { info, gap } : { info };
}

/** What the duplicate check keeps: the last seq per channel, the floor of forgotten channels, the newest seq. */
export type SeqTrack = Pick<Sub, "lastByChannel" | "floor" | "lastSeq">;

/**
 * The duplicate check of a non-durable subscription: true when `seq` is new on `channel` (and records it),
 * false for a seq at or below the last one delivered on that channel. Order is per channel: on a wildcard
 * subscription a message the server repaired late can follow newer messages of other channels. The last
 * `MAX_TRACKED_CHANNELS` channels are remembered; a forgotten channel's messages at or below `floor` are old.
 */
export function acceptSeq(sub: SeqTrack, channel: string, seq: number, maxChannels: number = MAX_TRACKED_CHANNELS): boolean {
  const last = sub.lastByChannel.get(channel) ?? sub.floor;
  if (seq <= last) return false;
  sub.lastByChannel.delete(channel);
  sub.lastByChannel.set(channel, seq);
  if (sub.lastByChannel.size > maxChannels) {
    const [oldest, s] = sub.lastByChannel.entries().next().value as [string, number];
    sub.lastByChannel.delete(oldest);
    if (s > sub.floor) sub.floor = s;
  }
  if (seq > sub.lastSeq) sub.lastSeq = seq;
  return true;
}
