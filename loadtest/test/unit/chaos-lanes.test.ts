// Overlapping faults (chaos --lanes): two faults never act on the same thing at once; different things overlap.
import { describe, expect, it } from "vitest";
import { Locks, OVERLAP_PLAN, resourcesOf } from "../../chaos/lanes.js";
import { FAULT_KINDS } from "../../chaos/schedule.js";
import type { Fault } from "../../chaos/schedule.js";

const fault = (kind: Fault["kind"], instance = 0): Fault => ({ atMs: 0, kind, instance, natsTarget: "leader", holdMs: 0, worker: 0, delayMs: 0 });

describe("chaos lanes", () => {
  it("chaos lanes — what each fault holds: a rolling restart nothing as a whole (it locks each instance in turn), NATS faults the NATS nodes", () => {
    expect(resourcesOf(fault("worker-kill", 2))).toEqual(["gw2"]);
    expect(resourcesOf(fault("rolling-restart"))).toEqual([]);
    expect(resourcesOf(fault("nats-pause"))).toEqual(["nats"]);
    expect(resourcesOf(fault("link-delay", 1))).toEqual(["link1"]);
    expect(resourcesOf(fault("client-stall"))).toEqual(["clients"]);
    // A split holds both regions it cuts apart: the fault's and the next one.
    expect(resourcesOf(fault("region-split", 2))).toEqual(["region2", "region0"]);
  });

  it("chaos lanes — a fault on a held thing waits for it; one on another thing goes at once", async () => {
    const locks = new Locks();
    const order: string[] = [];
    const r1 = await locks.take(["gw0", "gw1", "gw2"]);
    const waiting = locks.take(["gw1"]).then((r) => (order.push("gw1"), r));
    const other = await locks.take(["nats"]);
    order.push("nats");
    await new Promise((r) => setImmediate(r)); // a turn of the event loop: the waiting take has not gone
    expect(order).toEqual(["nats"]);
    r1();
    const r2 = await waiting;
    expect(order).toEqual(["nats", "gw1"]);
    r2();
    other();
    // Released: all can be taken again at once.
    (await locks.take(["gw0", "gw1", "gw2", "nats"]))();
  });
});

describe("chaos lanes — any of several", () => {
  it("chaos lanes — takeAny takes the first free name, and waits only while every one is held", async () => {
    const locks = new Locks();
    const r0 = await locks.take(["gw0"]);
    const a = await locks.takeAny(["gw0", "gw1", "gw2"]);
    expect(a.name).toBe("gw1");
    const b = await locks.takeAny(["gw0", "gw2"]);
    expect(b.name).toBe("gw2");
    let got: string | undefined;
    const waiting = locks.takeAny(["gw0", "gw2"]).then((x) => ((got = x.name), x));
    await new Promise((r) => setImmediate(r));
    expect(got).toBeUndefined();
    b.release();
    const c = await waiting;
    expect(c.name).toBe("gw2");
    r0();
    a.release();
    c.release();
    (await locks.take(["gw0", "gw1", "gw2"]))();
  });
});

describe("chaos lanes — the overlap plan", () => {
  it("chaos lanes — every kind is in exactly one group, and a group's kinds share what they lock", () => {
    const all = OVERLAP_PLAN.flatMap((g) => g.kinds);
    expect([...all].sort()).toEqual([...FAULT_KINDS].sort());
    for (const g of OVERLAP_PLAN) {
      // A group of one lock (NATS, the clients) gets one lane: more would only queue on it.
      const locks = new Set(g.kinds.flatMap((k) => resourcesOf(fault(k, 0))));
      if (locks.size === 1 && (locks.has("nats") || locks.has("clients"))) expect(g.lanes).toBe(1);
    }
  });
});
