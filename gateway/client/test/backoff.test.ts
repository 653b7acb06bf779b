import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { backoffDelay, GatewayClient, GatewayError } from "../src/index.js";

describe("client backoff — full jitter", () => {
  it("stays within [0, min(max, min·2^n)] and never above max, for any attempt and random draw", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2_000 }),
        fc.integer({ min: 0, max: 120_000 }),
        fc.integer({ min: 0, max: 10_000 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (min, extra, attempt, r) => {
          const max = min + extra;
          const d = backoffDelay(attempt, min, max, () => r);
          const cap = min === 0 ? 0 : Math.min(max, min * 2 ** attempt); // 0·2^1024 would be NaN
          expect(d).toBeGreaterThanOrEqual(0);
          expect(d).toBeLessThanOrEqual(cap);
          expect(d).toBeLessThanOrEqual(max);
          expect(Number.isInteger(d)).toBe(true);
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it("reaches both ends of the range: 0 with a zero draw, the cap with a draw near 1", () => {
    expect(backoffDelay(3, 100, 10_000, () => 0)).toBe(0);
    expect(backoffDelay(3, 100, 10_000, () => 0.999_999_9)).toBe(800);
    expect(backoffDelay(20, 100, 10_000, () => 0.999_999_9)).toBe(10_000);
    expect(backoffDelay(0, 100, 10_000, () => 0.999_999_9)).toBe(100);
  });

  it("spreads delays (full jitter, not equal jitter): draws land in both halves of the range", () => {
    const ds = Array.from({ length: 400 }, () => backoffDelay(4, 100, 1_000_000));
    expect(ds.some((d) => d < 800)).toBe(true);
    expect(ds.some((d) => d >= 800)).toBe(true);
    expect(Math.max(...ds)).toBeLessThanOrEqual(1_600);
  });
});

describe("client options — checked in the constructor", () => {
  const WebSocket = class {} as never;
  it("rejects bad delays and limits with a bad_option GatewayError", () => {
    for (const opts of [
      { minDelayMs: -1 },
      { minDelayMs: 500, maxDelayMs: 100 },
      { queueLimit: 1.5 },
      { connectTimeoutMs: 0 },
      { tokenVia: "header" as never },
    ]) {
      const e = (() => {
        try {
          new GatewayClient("ws://x/ws", { WebSocket, ...opts });
        } catch (err) {
          return err;
        }
      })();
      expect(e).toBeInstanceOf(GatewayError);
      expect((e as GatewayError).code).toBe("bad_option");
    }
  });

  it("queued publishes over queueLimit reject with queue_full while the earlier ones wait", async () => {
    const c = new GatewayClient("ws://127.0.0.1:9/ws", { WebSocket, queueLimit: 2 });
    const first = [c.publish("a.b", 1), c.publish("a.b", 2)];
    await expect(c.publish("a.b", 3)).rejects.toMatchObject({ code: "queue_full" });
    await c.close();
    for (const p of first) await expect(p).rejects.toMatchObject({ code: "closed" });
  });
});
