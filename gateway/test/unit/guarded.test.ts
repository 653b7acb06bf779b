// Callbacks handed to NATS (util/guarded.ts): a throw is caught, counted by kind and logged at most once a
// minute per kind, so that the library's read loop that called it goes on.
import client from "prom-client";
import { describe, expect, it, vi } from "vitest";
import type { Logger } from "../../src/log.js";
import { CallbackFaults } from "../../src/util/guarded.js";

describe("guarded — callbacks called from a NATS reader", () => {
  it("guarded — a throw is caught and counted by kind, logged once per kind however often it repeats; the result is passed through otherwise", async () => {
    const registry = new client.Registry();
    const counter = new client.Counter({ name: "t_callback_failures_total", help: "t", labelNames: ["kind"] as const, registers: [registry] });
    const log = { error: vi.fn(), warn: vi.fn() } as unknown as Logger;
    const faults = new CallbackFaults();
    faults.attach(log, counter);
    const seen: number[] = [];
    const cb = faults.guard("presence watch", (n: number) => {
      if (n % 2) throw new Error(`odd ${n}`);
      seen.push(n);
    });
    // The library's loop: it keeps calling after a throw.
    for (let n = 0; n < 10; n++) expect(() => cb(n)).not.toThrow();
    faults.guard("live feed", () => {
      throw new RangeError("deep");
    })();
    expect(seen).toEqual([0, 2, 4, 6, 8]);
    const text = await registry.metrics();
    expect(text).toContain('t_callback_failures_total{kind="presence watch"} 5');
    expect(text).toContain('t_callback_failures_total{kind="live feed"} 1');
    expect(vi.mocked(log.error).mock.calls.map((c) => (c[0] as { kind: string }).kind)).toEqual(["presence watch", "live feed"]);
  });

  it("guarded — before a logger is attached a throw is still caught", () => {
    const cb = new CallbackFaults().guard("x", () => {
      throw new Error("early");
    });
    expect(() => cb()).not.toThrow();
  });
});
