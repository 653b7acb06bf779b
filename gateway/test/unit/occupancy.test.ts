import { describe, expect, it } from "vitest";
import { OccupancyMachine, type Step } from "../../src/events/occupancy.js";
import { channelKey, MAX_READABLE_KEY, memberKey, subjectOfKey } from "../../src/events/shared-keys.js";
import { ShareTally } from "../../src/events/tally.js";

const D = 3_000;
const on = (key: string) => ({ key, on: true });
const off = (key: string) => ({ key, on: false });
const moves = (s: Step) => s.transitions;

/** A machine past its start with instances `a` and `b` alive, and the clock at `t`. */
function running(t = 0): OccupancyMachine {
  const m = new OccupancyMachine(D);
  m.heartbeat("a", true, t);
  m.heartbeat("b", true, t);
  expect(moves(m.sync(t))).toEqual([]);
  return m;
}

describe("occupancy — the leader's debounce of channel.occupied / channel.vacated", () => {
  it("occupancy — the first holder on any instance is on at once; others add nothing; the last gone is off after the debounce, once", () => {
    const m = running();
    expect(moves(m.share("k", "a", true, 0))).toEqual([on("k")]);
    expect(moves(m.share("k", "b", true, 10))).toEqual([]);
    expect(moves(m.share("k", "a", false, 20))).toEqual([]);
    expect(moves(m.share("k", "b", false, 30))).toEqual([]);
    expect(m.nextDue()).toBe(30 + D);
    expect(moves(m.tick(30 + D - 1))).toEqual([]);
    expect(moves(m.tick(30 + D))).toEqual([off("k")]);
    expect(m.nextDue()).toBeUndefined();
    expect(moves(m.tick(60_000))).toEqual([]);
  });

  it("occupancy — a holder back within the debounce (a reconnect, on another instance too) records neither off nor on", () => {
    const m = running();
    m.share("k", "a", true, 0);
    m.share("k", "a", false, 100);
    expect(moves(m.share("k", "b", true, 100 + D - 1))).toEqual([]);
    expect(m.nextDue()).toBeUndefined();
    expect(moves(m.tick(100 + 2 * D))).toEqual([]);
    m.share("k", "b", false, 10_000);
    expect(moves(m.tick(10_000 + D))).toEqual([off("k")]);
    // Back after the debounce: a new on.
    expect(moves(m.share("k", "a", true, 20_000))).toEqual([on("k")]);
  });

  it("occupancy — on and off alternate strictly per key, whatever the order of shares (repeats, removals of nothing)", () => {
    const m = running();
    const seen: boolean[] = [];
    const take = (s: Step) => seen.push(...s.transitions.map((t) => t.on));
    let t = 0;
    let seed = 12345;
    // mulberry32: a fixed sequence, so a failure repeats.
    const rand = (n: number): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
      return ((x ^ (x >>> 14)) >>> 0) % n;
    };
    for (let i = 0; i < 500; i++) {
      t += rand(2 * D);
      take(m.share("k", rand(2) === 0 ? "a" : "b", rand(2) === 0, t));
      take(m.tick(t));
    }
    take(m.tick(t + D));
    expect(seen.length).toBeGreaterThan(20);
    seen.forEach((v, i) => expect(v).toBe(i % 2 === 0));
  });

  it("occupancy — an instance whose heartbeat expires holds nothing: its keys go off after the debounce, its shares are stale", () => {
    const m = running();
    m.share("k1", "a", true, 0);
    m.share("k2", "a", true, 0);
    m.share("k2", "b", true, 0);
    const s = m.heartbeat("a", false, 1_000);
    expect(s.stale).toEqual(
      expect.arrayContaining([
        { key: "k1", instance: "a" },
        { key: "k2", instance: "a" },
      ]),
    );
    expect(moves(s)).toEqual([]);
    expect(moves(m.tick(1_000 + D))).toEqual([off("k1")]);
    // A share written by the dead instance later is ignored (and stale) until a heartbeat of it comes.
    const late = m.share("k1", "a", true, 5_000);
    expect(moves(late)).toEqual([]);
    expect(late.stale).toEqual([{ key: "k1", instance: "a" }]);
    m.heartbeat("a", true, 6_000);
    expect(moves(m.share("k1", "a", true, 6_000))).toEqual([on("k1")]);
  });

  it("occupancy — a new leader starts from what the last one announced: held and announced is quiet, held only is on, announced only is off after the debounce", () => {
    const m = new OccupancyMachine(D);
    m.heartbeat("a", true, 0);
    m.share("held-and-announced", "a", true, 0);
    m.share("held-only", "a", true, 0);
    m.wasAnnounced("held-and-announced");
    m.wasAnnounced("announced-only");
    // Before the sync nothing is announced, however the records come.
    expect(moves(m.share("x", "a", true, 0))).toEqual([]);
    const s = m.sync(100);
    expect(moves(s)).toEqual([on("held-only"), on("x")]);
    expect(moves(m.tick(100 + D))).toEqual([off("announced-only")]);
  });

  it("occupancy — at the sync, shares of instances without a heartbeat (died while no leader watched) are dropped and stale", () => {
    const m = new OccupancyMachine(D);
    m.share("k", "dead", true, 0);
    m.wasAnnounced("k");
    m.heartbeat("a", true, 0);
    const s = m.sync(0);
    expect(s.stale).toEqual([{ key: "k", instance: "dead" }]);
    expect(moves(s)).toEqual([]);
    expect(moves(m.tick(D))).toEqual([off("k")]);
  });

  it("occupancy — debounce 0: off at once", () => {
    const m = new OccupancyMachine(0);
    m.heartbeat("a", true, 0);
    m.sync(0);
    expect(moves(m.share("k", "a", true, 0))).toEqual([on("k")]);
    expect(moves(m.share("k", "a", false, 1))).toEqual([off("k")]);
  });
});

describe("occupancy — keys and the worker's tally", () => {
  it("occupancy — channel and member keys read back exactly, odd characters and patterns included", () => {
    for (const channel of ["rooms.42", "orders.*", "a.>", "ü.x=y"]) {
      expect(subjectOfKey(channelKey(channel))).toEqual({ kind: "channel", channel });
      expect(subjectOfKey(memberKey("alice.b@x", channel))).toEqual({ kind: "member", user: "alice.b@x", channel });
      expect(channelKey(channel)).toMatch(/^[-/_=.a-zA-Z0-9]+$/);
    }
    expect(subjectOfKey("x.y")).toBeUndefined();
    expect(subjectOfKey("u.alice")).toBeUndefined();
  });

  it("occupancy — keys of the longest valid names fit a NATS subject; short keys keep their readable form", () => {
    // 256 and 255 characters of 3-byte UTF-8 (the longest user and channel): 4,600 characters read the old way.
    const user = "界".repeat(256);
    const channel = ["ч", "界".repeat(100), "🙂".repeat(50), "x=y".repeat(16)].join(".");
    expect(channel.length).toBeLessThanOrEqual(255);
    for (const [key, subject] of [
      [memberKey(user, channel), { kind: "member", user, channel }],
      [channelKey(channel), { kind: "channel", channel }],
      [memberKey("=3D", "=.==.x"), { kind: "member", user: "=3D", channel: "=.==.x" }],
    ] as const) {
      expect(key.length).toBeLessThanOrEqual(MAX_READABLE_KEY);
      expect(key).toMatch(/^[-/_=.a-zA-Z0-9]+$/);
      expect(subjectOfKey(key)).toEqual(subject);
    }
    // The readable form, as keys were written before: a running deployment's keys keep their names.
    expect(memberKey("ü.b", "rooms.ä=1")).toBe("u.=C3=BC=2Eb.rooms.=C3=A4=3D1");
    expect(channelKey("界.x")).toBe("c.=E7=95=8C.x");
  });

  it("occupancy — a worker reports only each key's 0↔1 transitions; a removal of what it never held reports nothing", () => {
    const reports: [string, boolean][] = [];
    const t = new ShareTally((k, h) => reports.push([k, h]));
    t.add("k");
    t.add("k");
    t.remove("k");
    t.remove("k");
    t.remove("k");
    t.add("k");
    expect(reports).toEqual([
      ["k", true],
      ["k", false],
      ["k", true],
    ]);
  });
});
