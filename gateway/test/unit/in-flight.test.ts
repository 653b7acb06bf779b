import { describe, expect, it } from "vitest";
import { InFlight } from "../../src/util/in-flight.js";

describe("InFlight — what a drain waits for", () => {
  it("in-flight — settled waits for every tracked promise, rejected ones included, and forgets them", async () => {
    const f = new InFlight();
    let ok!: () => void;
    let fail!: (e: Error) => void;
    const a = f.track(new Promise<void>((r) => (ok = r)));
    const b = f.track(new Promise<void>((_r, j) => (fail = j)));
    b.catch(() => undefined);
    expect(f.size).toBe(2);
    const waiting = f.settled(10_000);
    ok();
    fail(new Error("nope"));
    expect(await waiting).toBe(true);
    await a;
    expect(f.size).toBe(0);
    expect(await f.settled(0)).toBe(true);
  });

  it("in-flight — settled gives up after its bound, false, and leaves the unsettled one tracked", async () => {
    const f = new InFlight();
    f.track(new Promise<void>(() => undefined));
    expect(await f.settled(20)).toBe(false);
    expect(f.size).toBe(1);
  });
});
