// A subscription's one end (ws/sub-expiry-rule.ts, ws/sub-expiry.ts): which source's expiry stands, when it is
// due, and the one timer acting on it, driven with a fake socket, the real Subscriptions and fake timers.
import client from "prom-client";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { anonymousIdentity } from "../../src/auth/access.js";
import type { FanoutHub } from "../../src/fanout/hub.js";
import { Resume } from "../../src/fanout/resume.js";
import { createLogger } from "../../src/log.js";
import { createMetrics } from "../../src/metrics/metrics.js";
import type { HandlerContext } from "../../src/ws/context.js";
import { newSession, type Socket } from "../../src/ws/session.js";
import { setSubExpiry } from "../../src/ws/sub-expiry.js";
import { MAX_TIMER_MS, nextExpiry, refreshableByToken, timerDelayMs } from "../../src/ws/sub-expiry-rule.js";
import { Subscriptions } from "../../src/ws/subscriptions.js";
import { WarnEvery } from "../../src/util/warn-every.js";

describe("sub expiry — the rule", () => {
  it("sub expiry — a token's is due at exp plus the clock tolerance, the hook's at exp as given", () => {
    expect(nextExpiry(undefined, "token", 100, 5)).toEqual({ source: "token", exp: 100, dueMs: 105_000 });
    expect(nextExpiry(undefined, "hook", 100, 5)).toEqual({ source: "hook", exp: 100, dueMs: 100_000 });
  });

  it("sub expiry — a token's replaces any; the hook's replaces the hook's, never a token's", () => {
    const token = nextExpiry(undefined, "token", 100, 0)!;
    const hook = nextExpiry(undefined, "hook", 100, 0)!;
    expect(nextExpiry(token, "token", 200, 0)?.exp).toBe(200);
    expect(nextExpiry(hook, "token", 50, 0)).toMatchObject({ source: "token", exp: 50 });
    expect(nextExpiry(hook, "hook", 200, 0)?.exp).toBe(200);
    expect(nextExpiry(token, "hook", 50, 0)).toBeUndefined();
    expect(nextExpiry(token, "hook", 500, 0)).toBeUndefined();
  });

  it("sub expiry — a sub_refresh frame moves a token's expiry only", () => {
    expect(refreshableByToken(nextExpiry(undefined, "token", 1, 0))).toBe(true);
    expect(refreshableByToken(nextExpiry(undefined, "hook", 1, 0))).toBe(false);
    expect(refreshableByToken(undefined)).toBe(false);
  });

  it("sub expiry — the timer's delay is never negative and at most setTimeout's longest", () => {
    expect(timerDelayMs(1_000, 400)).toBe(600);
    expect(timerDelayMs(1_000, 2_000)).toBe(0);
    expect(timerDelayMs(Number.MAX_SAFE_INTEGER, 0)).toBe(MAX_TIMER_MS);
  });
});

const metrics = createMetrics(new client.Registry());
const log = createLogger("silent", {});

function fakeSocket(): Socket & { frames: Record<string, unknown>[] } {
  const s = newSession(anonymousIdentity("127.0.0.1"));
  const frames: Record<string, unknown>[] = [];
  return {
    frames,
    getUserData: () => s,
    subscribe: () => true,
    unsubscribe: () => true,
    send: (d: string) => (frames.push(JSON.parse(d) as Record<string, unknown>), 1),
    cork: (f: () => void) => f(),
    getBufferedAmount: () => 0,
  } as unknown as Socket & { frames: Record<string, unknown>[] };
}

function context(): HandlerContext {
  const hub = { release: () => undefined, get: () => undefined } as unknown as FanoutHub;
  const subs = new Subscriptions({
    lifecycle: { resume: new Resume(hub, { holdLimit: 100, backpressureBytes: 1 << 20 }, log), connected: () => true, log },
    hub,
    backpressure: { bytes: 1 << 20, maxBytes: 1 << 24, slowTimeoutMs: 60_000 },
    metrics,
    log,
    onSlow: () => undefined,
  });
  // No sub_refresh hook: a hook's expiry ends the subscription when it falls due.
  const guard = { clockToleranceSec: 0, access: { hooks: undefined } };
  return { subs, metrics, log, guard, failures: new WarnEvery(log, 60_000, "op") } as unknown as HandlerContext;
}

describe("sub expiry — one timer per subscription", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
  const nowS = () => Date.now() / 1000;
  const ended = (ws: ReturnType<typeof fakeSocket>) => ws.frames.map((f) => `${String(f.op)} ${String(f.code)}`);

  it("sub expiry — a token's ends the subscription alone with unsub subscription_expired at its exp", () => {
    const ctx = context();
    const ws = fakeSocket();
    const sub = ctx.subs.begin(ws, "a.b");
    setSubExpiry(ctx, ws, sub, "token", nowS() + 2);
    vi.advanceTimersByTime(1_900);
    expect(ws.frames).toEqual([]);
    vi.advanceTimersByTime(200);
    expect(ended(ws)).toEqual(["unsub subscription_expired"]);
    expect(sub.life.phase).toBe("ended");
    expect(ws.getUserData().closed).toBe(false);
  });

  it("sub expiry — a token refreshed before its exp: the first timer does not fire, the new exp ends it", () => {
    const ctx = context();
    const ws = fakeSocket();
    const sub = ctx.subs.begin(ws, "a.b");
    setSubExpiry(ctx, ws, sub, "token", nowS() + 1);
    expect(setSubExpiry(ctx, ws, sub, "token", nowS() + 3)).toBe(true);
    vi.advanceTimersByTime(2_000);
    expect(ws.frames).toEqual([]);
    vi.advanceTimersByTime(1_100);
    expect(ended(ws)).toEqual(["unsub subscription_expired"]);
  });

  it("sub expiry — with a token's and a hook's, the token's is the end: the hook's earlier exp neither fires nor replaces it", () => {
    const ctx = context();
    const ws = fakeSocket();
    const sub = ctx.subs.begin(ws, "a.b");
    setSubExpiry(ctx, ws, sub, "token", nowS() + 5);
    expect(setSubExpiry(ctx, ws, sub, "hook", nowS() + 1)).toBe(false);
    vi.advanceTimersByTime(4_000);
    expect(ws.frames).toEqual([]);
    vi.advanceTimersByTime(1_100);
    expect(ended(ws)).toEqual(["unsub subscription_expired"]);
  });

  it("sub expiry — a hook's without a sub_refresh hook ends it with err forbidden; a token given later replaces it", () => {
    const ctx = context();
    const ws = fakeSocket();
    const hookOnly = ctx.subs.begin(ws, "h.1");
    setSubExpiry(ctx, ws, hookOnly, "hook", nowS() + 1);
    const replaced = ctx.subs.begin(ws, "h.2");
    setSubExpiry(ctx, ws, replaced, "hook", nowS() + 1);
    setSubExpiry(ctx, ws, replaced, "token", nowS() + 3);
    vi.advanceTimersByTime(1_100);
    expect(ended(ws)).toEqual(["err forbidden"]);
    expect(hookOnly.life.phase).toBe("ended");
    expect(replaced.life.phase).not.toBe("ended");
    vi.advanceTimersByTime(2_000);
    expect(ended(ws)).toEqual(["err forbidden", "unsub subscription_expired"]);
  });

  it("sub expiry — an ended subscription's timer is cleared: nothing is sent at its exp", () => {
    const ctx = context();
    const ws = fakeSocket();
    const sub = ctx.subs.begin(ws, "a.b");
    setSubExpiry(ctx, ws, sub, "token", nowS() + 1);
    ctx.subs.end(ws, sub);
    vi.advanceTimersByTime(2_000);
    expect(ws.frames).toEqual([]);
    expect(vi.getTimerCount()).toBe(0);
  });
});
