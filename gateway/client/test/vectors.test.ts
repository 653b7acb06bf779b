// The shared vectors of the SDKs' pure parts (gateway/conformance/vectors/frames.json): the Kotlin SDK's
// VectorsTest reads the same file, so both write and read the same frames and keep the same positions.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { backoffDelay } from "../src/backoff.js";
import { toMessage } from "../src/delivery.js";
import { wireError } from "../src/errors.js";
import { presenceEvent } from "../src/presence.js";
import { batchResults, pubFrame } from "../src/publish.js";
import { acceptOk, acceptSeq, newSub, subscribeFrame, type Sub } from "../src/subscriptions.js";
import type { Frame, GatewayMessage, SubscribeInfo, SubscribeOptions } from "../src/types.js";
import { deferred } from "../src/util.js";

type V = Record<string, unknown> & { name: string };
const vectors = JSON.parse(readFileSync(new URL("../../conformance/vectors/frames.json", import.meta.url), "utf8")) as Record<string, V[]>;
const cases = (kind: string) => vectors[kind]!.map((v) => [v.name, v] as const);

/** A subscription record at `position`; `resumes` is a server-side one (it resumes from its announced seq). */
function subAt(channel: string, options: SubscribeOptions, position: { lastSeq: number; epoch?: string }, resumes = false): Sub {
  const sub = newSub(
    channel,
    () => undefined,
    options,
    deferred<SubscribeInfo>(),
    () => undefined,
  );
  sub.lastSeq = position.lastSeq;
  sub.floor = position.lastSeq;
  if (position.epoch !== undefined) sub.epoch = position.epoch;
  if (resumes) sub.auto = true;
  return sub;
}

describe("vectors — the frames and positions every SDK shares", () => {
  it.each(cases("backoff"))("vectors — backoff: %s", (_, v) => {
    expect(backoffDelay(v.attempt as number, v.minMs as number, v.maxMs as number, () => v.random as number)).toBe(v.delay);
  });

  it.each(cases("subscribe"))("vectors — subscribe: %s", (_, v) => {
    const sub = subAt(v.channel as string, v.options as SubscribeOptions, v.position as { lastSeq: number }, v.resumes as boolean);
    const { frame, expectedSeq } = subscribeFrame(sub);
    expect(frame).toEqual(v.frame);
    expect(expectedSeq ?? null).toBe(v.expectedSeq);
  });

  it.each(cases("acceptOk"))("vectors — acceptOk: %s", (_, v) => {
    const sub = subAt(v.channel as string, {}, v.position as { lastSeq: number });
    const { info, gap } = acceptOk(sub, v.reply as Frame, (v.expectedSeq as number | null) ?? undefined);
    expect(info).toEqual(v.info);
    expect(gap === undefined ? null : (({ type: _t, ...rest }) => rest)(gap)).toEqual(v.gap);
    expect({ lastSeq: sub.lastSeq, ...(sub.epoch !== undefined ? { epoch: sub.epoch } : {}) }).toEqual(v.after);
  });

  it.each(cases("dedup"))("vectors — dedup: %s", (_, v) => {
    const track = { lastByChannel: new Map<string, number>(), floor: 0, lastSeq: 0 };
    for (const [channel, seq, accepted] of v.deliveries as [string, number, boolean][]) {
      expect(acceptSeq(track, channel, seq, v.maxChannels as number), `${channel} ${seq}`).toBe(accepted);
    }
    expect(track.lastSeq).toBe(v.lastSeq);
  });

  it.each(cases("publish"))("vectors — publish: %s", (_, v) => {
    const pub = {
      channel: v.channel as string,
      data: v.data,
      msgId: v.msgId as string,
      ...(v.ttl ? { ttl: v.ttl as string } : {}),
      resolve: () => undefined,
      reject: () => undefined,
    };
    expect(pubFrame(pub)).toEqual(v.frame);
  });

  it.each(cases("batch"))("vectors — batch: %s", (_, v) => {
    expect(pubFrame({ batch: v.items as { channel: string; data: unknown; msgId: string }[], resolve: () => undefined, reject: () => undefined })).toEqual(
      v.frame,
    );
  });

  it.each(cases("batchResults"))("vectors — batchResults: %s", (_, v) => {
    const got = batchResults((v.reply as { results: Frame[] }).results).map((r) =>
      "error" in r ? { error: { code: r.error.code, temporary: r.error.temporary } } : r,
    );
    expect(got).toEqual(v.results);
  });

  it.each(cases("message"))("vectors — message: %s", (_, v) => {
    const f = v.frame as Frame;
    const m: Partial<GatewayMessage> = toMessage(f, Number(f.seq), String(f.sub), false, () => undefined);
    const got = Object.fromEntries(Object.entries(m).filter(([k, x]) => x !== undefined && typeof x !== "function" && k !== "ack"));
    expect(got).toEqual(v.message);
  });

  it.each(cases("settle"))("vectors — settle: %s", (_, v) => {
    const sent: unknown[] = [];
    const f = { op: "msg", channel: "x", sub: v.subChannel, seq: v.seq, data: 1 } as Frame;
    const m = toMessage(f, v.seq as number, v.subChannel as string, v.explicitAck as boolean, (frame) => sent.push(frame));
    for (const [call, arg] of v.calls as [string, number?][]) {
      if (call === "ack") m.ack();
      else if (call === "nak") m.nak(arg);
      else if (call === "term") m.term();
      else m.inProgress();
    }
    expect(sent).toEqual(v.sent);
  });

  it.each(cases("presence"))("vectors — presence: %s", (_, v) => {
    expect(presenceEvent(v.frame as Frame)).toEqual(v.event);
  });

  it.each(cases("errors"))("vectors — errors: %s", (_, v) => {
    const e = wireError(v.frame as Frame);
    expect([e.code, e.temporary, e.appCode]).toEqual([v.code, v.temporary, v.appCode]);
  });
});
