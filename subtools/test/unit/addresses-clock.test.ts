// Pure parts of the new tool features: source-address planning, the clock offset estimate and its use in
// merge, and the Socket.IO / centrifuge frame readers.
import { describe, expect, it } from "vitest";
import { addressOf, boundPortRange, planAddresses } from "../../src/addresses.js";
import { dataPayload, endPayload, estimateOffset, LatencyStats, publisherHost } from "../../src/shared/mod.js";
import { emptyCounts, mergeResults, ClockMixError, type SubResult, type ClockSection } from "../../src/result.js";
import { ClientState, Receiver } from "../../src/receiver.js";
import { hostname } from "node:os";
import { bs, scanCentrifugeLine, scanGatewayBytes, scanSocketIoBytes } from "../../src/scan-bytes.js";

const RANGE = { low: 32768, high: 60999 };

describe("source addresses", () => {
  it("addresses — up to 85 % of one pair's ephemeral ports stay on the kernel's default source", () => {
    const p = planAddresses(["127.0.0.1"], 9000, 20_000, [], RANGE);
    expect(p.hosts[0]!.sources).toEqual([undefined]);
    expect(p.notes).toEqual([]);
  });

  it("addresses — 100,000 loopback clients are spread over 127.0.0.2… and the plan says so", () => {
    const p = planAddresses(["127.0.0.1"], 9000, 100_000, [], RANGE);
    expect(p.hosts[0]!.sources).toEqual(["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]);
    expect(p.notes[0]).toMatch(
      /spreading 100,000 connections to 127\.0\.0\.1:9000 over 4 source addresses 127\.0\.0\.2–127\.0\.0\.5 \(~25,000 each, source ports from 1024 up on each, outside the ephemeral range/,
    );
    const per = new Map<string | undefined, number>();
    for (let g = 0; g < 100_000; g++) {
      const a = addressOf(p, g).localAddress;
      per.set(a, (per.get(a) ?? 0) + 1);
    }
    expect([...per.values()]).toEqual([25_000, 25_000, 25_000, 25_000]);
    // Each address's clients take ports from 1024 up, one each, skipping the server's own port, and never
    // one of the ephemeral range (the kernel's connects elsewhere would find those taken).
    const near = planAddresses(["127.0.0.1"], 1026, 100_000, [], RANGE);
    expect([0, 4, 8, 12].map((g) => addressOf(near, g).localPort)).toEqual([1024, 1025, 1027, 1028]);
    const ports = Array.from({ length: 100_000 }, (_, g) => addressOf(p, g).localPort!);
    expect(Math.max(...ports)).toBeLessThan(RANGE.low);
  });

  it("addresses — planned ports lie on the larger side outside the ephemeral range, or nowhere", () => {
    expect(boundPortRange(RANGE)).toEqual({ low: 1024, high: 32767 });
    expect(boundPortRange({ low: 10_000, high: 20_000 })).toEqual({ low: 20_001, high: 65535 });
    expect(boundPortRange({ low: 1024, high: 65000 })).toBeUndefined();
    const p = planAddresses(["127.0.0.1"], 9000, 100_000, [], { low: 1024, high: 65000 });
    expect(p.hosts[0]!.sources.length).toBe(2);
    expect(addressOf(p, 0)).toEqual({ host: "127.0.0.1", localAddress: "127.0.0.2" });
    expect(p.notes[0]).toMatch(/source ports picked by the kernel/);
  });

  it("addresses — a remote host is not spread but warned about; given addresses are used round-robin", () => {
    const remote = planAddresses(["10.0.0.5"], 9000, 40_000, [], RANGE);
    expect(remote.hosts[0]!.sources).toEqual([undefined]);
    expect(remote.warnings[0]).toMatch(/expect EADDRNOTAVAIL; give this host 2 addresses with --local-address/);
    const given = planAddresses(["a", "b"], 9000, 4, ["192.0.2.1", "192.0.2.2"], RANGE);
    expect([0, 1, 2, 3].map((g) => addressOf(given, g))).toEqual([
      { host: "a", localAddress: "192.0.2.1" },
      { host: "b", localAddress: "192.0.2.1" },
      { host: "a", localAddress: "192.0.2.2" },
      { host: "b", localAddress: "192.0.2.2" },
    ]);
  });
});

describe("clock offset", () => {
  it("clock — the offset comes from the exchange with the smallest round trip", () => {
    // Server 5 ms ahead; the second exchange is the tightest.
    const e = estimateOffset([
      { sentUs: 1_000, serverUs: 1_000 + 5_000 + 400, recvUs: 1_900 },
      { sentUs: 2_000, serverUs: 2_000 + 5_000 + 30, recvUs: 2_060 },
      { sentUs: 3_000, serverUs: 3_000 + 5_000 + 10, recvUs: 3_500 },
    ]);
    expect(e).toEqual({ offsetUs: 5_000, rttUs: 60 });
  });

  it("clock — latencies from a publisher on another host are corrected by both offsets; from this host they are not", () => {
    // This host is 1,000 µs behind the server (offset +1,000); the other host 400 µs behind (offset +400).
    const rx = new Receiver(false, 1_000);
    const c = new ClientState();
    const me = hostname().replace(/[^A-Za-z0-9._:@-]/g, "_");
    rx.payload(c, '{"p":"far-away-host-77-1:x","s":1,"t":1000000,"o":400,"x":"x"}', 1_005_000);
    rx.payload(c, `{"p":"${me}-78-1:x","s":1,"t":1000000,"o":400,"x":"x"}`, 1_005_000);
    expect(rx.window.count).toBe(2);
    // 5,000 µs on the clocks; in the server's time (1,005,000 + 1,000) − (1,000,000 + 400) = 5,600.
    expect([rx.window.min, rx.window.max]).toEqual([5_000, 5_600]);
    expect(rx.publishers.map((p) => [p.host, p.sameHost, p.corrected, p.correctionUs])).toEqual([
      ["far-away-host", false, true, 600],
      [me, true, false, 0],
    ]);
  });

  it("receiver — the first and last message's receive times span the messages, end markers aside", () => {
    const rx = new Receiver(false, null);
    const c = new ClientState();
    expect([rx.firstMsgUs, rx.lastMsgUs]).toEqual([0, 0]);
    rx.payload(c, endPayload("h-1-1:x", 0), 900);
    expect([rx.firstMsgUs, rx.lastMsgUs]).toEqual([0, 0]);
    rx.payload(c, dataPayload("h-1-1:x", 1, 1_000, 64), 2_000);
    rx.payload(c, dataPayload("h-1-1:x", 2, 1_500, 64), 3_500);
    rx.payload(c, endPayload("h-1-1:x", 2), 9_000);
    expect([rx.firstMsgUs, rx.lastMsgUs]).toEqual([2_000, 3_500]);
  });

  it("clock — a publisher id names its host, whatever dashes the host name has", () => {
    expect(publisherHost("load-host-3-12345-2:bench.x")).toBe("load-host-3");
    expect(publisherHost("vm-99-1:a:b")).toBe("vm");
  });

  const result = (clock: ClockSection | undefined): SubResult => {
    const s = new LatencyStats();
    s.record(1000);
    return {
      version: 1,
      tool: "sub-cluster",
      target: "gateway",
      hosts: ["gw"],
      port: 9000,
      channels: ["x"],
      processes: 1,
      clientsPerProcess: 1,
      startedAt: "2026-01-01T00:00:00.000Z",
      durationMs: 1,
      stopReason: "duration",
      counts: { ...emptyCounts(), received: 1 },
      latency: s.toJSON(),
      cpu: [],
      clock,
    };
  };
  const pub = (host: string, corrected: boolean) => ({
    id: `${host}-1-1:x`,
    host,
    sameHost: false,
    offsetUs: corrected ? 10 : null,
    correctionUs: corrected ? 5 : 0,
    corrected,
  });

  it("merge — refuses results whose publishers' clock offsets were unknown, unless told to accept them", () => {
    const good = result({ host: "b", self: null, publishers: [pub("a", true)], status: "corrected" });
    const bad = result({ host: "c", self: null, selfReason: "no pong time", publishers: [pub("a", false)], status: "uncorrected" });
    expect(() => mergeResults([good, bad], ["b.json", "c.json"])).toThrow(ClockMixError);
    expect(() => mergeResults([good, bad], ["b.json", "c.json"])).toThrow(/c\.json: publishers on a with no known clock offset/);
    const m = mergeResults([good, bad], ["b.json", "c.json"], true);
    expect(m.notes!.join("\n")).toMatch(/WARNING: merged with --accept-unknown-offsets/);
    expect(mergeResults([good, result({ host: "a", self: null, publishers: [], status: "single-host" })], ["b", "a"]).counts.received).toBe(2);
  });
});

describe("gateway frame reader (bytes)", () => {
  const text = (b: Buffer, s: number, e: number): string => b.toString("latin1", s, e);
  it("gateway bytes — the gateway's layout is read in one pass: sub, seq, payload", () => {
    const f = Buffer.from(
      '{"op":"msg","channel":"orders.eu","sub":"orders.*","seq":1234,"ts":1795288871193.416,"data":{"p":"h-1-1:orders.eu","s":9,"t":1795288871190000,"o":-3,"x":"xxx"}}',
    );
    expect(scanGatewayBytes(f, 0, f.length)).toBe(1);
    expect([text(f, bs.subStart, bs.subEnd), bs.seq, text(f, bs.pStart, bs.pEnd), bs.s, bs.t, bs.o]).toEqual([
      "orders.*",
      1234,
      "h-1-1:orders.eu",
      9,
      1795288871190000,
      -3,
    ]);
  });

  it("gateway bytes — other layouts, end markers and control frames are still told apart", () => {
    const reordered = Buffer.from('{"op":"msg","seq":77,"channel":"c","sub":"c","ts":1,"data":{"s":2,"p":"h-1-1:c","t":5}}');
    expect(scanGatewayBytes(reordered, 0, reordered.length)).toBe(1);
    expect([bs.seq, bs.s, bs.t]).toEqual([77, 2, 5]);
    const end = Buffer.from('{"op":"msg","channel":"c","sub":"c","seq":78,"ts":2.5,"data":{"p":"h-1-1:c","end":true,"total":40}}');
    expect(scanGatewayBytes(end, 0, end.length)).toBe(1);
    expect([bs.end, bs.total, bs.seq]).toEqual([true, 40, 78]);
    const other = Buffer.from('{"op":"msg","channel":"c","sub":"c","seq":79,"ts":3,"data":{"total":12.5}}');
    expect(scanGatewayBytes(other, 0, other.length)).toBe(-1);
    const ok = Buffer.from('{"op":"ok","id":1,"epoch":"2026-11-22T18:02:18.473482047Z"}');
    expect(scanGatewayBytes(ok, 0, ok.length)).toBe(0);
  });
});

describe("peer frame readers", () => {
  it("Socket.IO — a msg event's payload is read; other packets are left to the client", () => {
    const f = Buffer.from('42["msg",{"p":"h-1-1:x","s":7,"t":123456,"x":"xx"}]');
    expect(scanSocketIoBytes(f, 0, f.length)).toBe(1);
    expect([bs.s, bs.t, f.toString("latin1", bs.pStart, bs.pEnd)]).toEqual([7, 123456, "h-1-1:x"]);
    for (const other of ["2", '0{"sid":"a"}', "40", "431[true]"]) expect(scanSocketIoBytes(Buffer.from(other), 0, other.length)).toBe(0);
  });

  it("centrifuge — a publication push line is read; replies and pings are not", () => {
    const line = Buffer.from('{"push":{"channel":"x","pub":{"data":{"p":"h-1-1:x","s":3,"t":99,"o":-4,"x":"x"},"offset":3}}}');
    expect(scanCentrifugeLine(line, 0, line.length)).toBe(1);
    expect([bs.s, bs.t, bs.o]).toEqual([3, 99, -4]);
    for (const other of ["{}", '{"id":1,"connect":{"client":"c"}}']) expect(scanCentrifugeLine(Buffer.from(other), 0, other.length)).toBe(0);
  });
});
