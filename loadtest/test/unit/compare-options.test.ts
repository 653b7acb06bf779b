// compare's command line through the kit (the flags it declares in loadtest/compare/workload.ts) into the run's
// options: the defaults of a full run, what --quick scales, the old --duration, and the refusals.
import { describe, expect, it } from "vitest";
import { FlagError, parseFlags } from "../../kit/flags.js";
import { BENCH, compareOptions, ROWS } from "../../compare/workload.js";

const opts = (...argv: string[]) => compareOptions(parseFlags(BENCH.flags, argv), "/out");

describe("compare — options", () => {
  it("compare options — a full run: every row at full size, 30 s of publishing, 60 s of drain, both brokers, 2 workers", () => {
    const o = opts();
    expect(o).toEqual({ scale: 1, publishS: 30, rows: [...ROWS], brokers: ["jetstream", "redis"], workers: 2, drainS: 60, outDir: "/out", render: undefined });
  });

  it("compare options — --quick scales the clients by 0.1 and the times to their floors (5 s, 15 s)", () => {
    const o = opts("--quick");
    expect(o.scale).toBe(0.1);
    expect(o.rows.map((r) => r.clients)).toEqual([80, 80, 80, 800, 800, 800]);
    expect([o.publishS, o.drainS]).toEqual([5, 15]);
  });

  it("compare options — --seconds sets the publishing time, --duration is its old name; --rows picks by key or client count", () => {
    expect(opts("--seconds", "12").publishS).toBe(12);
    expect(opts("--duration", "7").publishS).toBe(7);
    expect(opts("--rows", "800x10,8000").rows).toEqual([
      { clients: 800, rate: 10 },
      { clients: 8000, rate: 10 },
      { clients: 8000, rate: 50 },
      { clients: 8000, rate: 100 },
    ]);
    expect(opts("--scale", "0.5", "--rows", "800x1").rows).toEqual([{ clients: 400, rate: 1 }]);
  });

  it("compare options — refusals name the flag: an unknown broker, a scale above 1, rows that select nothing", () => {
    expect(() => opts("--brokers", "kafka")).toThrow(/--brokers must be one of jetstream, redis, not "kafka"/);
    expect(() => opts("--scale", "2")).toThrow(/--scale must be at most 1, not 2/);
    expect(() => opts("--drain", "1")).toThrow(/--drain must be at least 5/);
    expect(() => opts("--rows", "900")).toThrow(FlagError);
  });
});
