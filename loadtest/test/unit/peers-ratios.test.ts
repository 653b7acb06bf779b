// compare:peers' CPU ratio of the gateway to each bare uWS floor that ran beside it.
import { describe, expect, it } from "vitest";
import { cpuRatios, renderPeersMarkdown, type PeerRow, type ServerName } from "../../compare/peers-report.js";

const row = (server: ServerName, us: number, ok = true): PeerRow =>
  ({
    server,
    clients: 2000,
    rate: 100,
    seconds: 20,
    ok,
    notes: [],
    serverUsPerDelivery: us,
    brokerUsPerDelivery: 0,
    serverCpuPct: 80,
    rssIdleMB: 1,
    rssLoadMB: 2,
    loadAvg: 3,
  }) as PeerRow;

describe("compare:peers — CPU ratios to the uWS floors", () => {
  it("divides the gateway's CPU per delivery by each floor's that ran, skipping failed rows", () => {
    const rounded = (rows: PeerRow[]) => cpuRatios(rows).map((x) => ({ ...x, ratio: Math.round(x.ratio * 1000) / 1000 }));
    expect(rounded([row("gateway", 4.2), row("uws", 4), row("uws2", 4.2)])).toEqual([
      { floor: "uws", ratio: 1.05 },
      { floor: "uws2", ratio: 1 },
    ]);
    expect(rounded([row("gateway", 4.2), row("uws", 4, false), row("uws2", 3)])).toEqual([{ floor: "uws2", ratio: 1.4 }]);
    expect(cpuRatios([row("gateway", 4.2, false), row("uws", 4)])).toEqual([]);
  });

  it("the report names each ratio", () => {
    const md = renderPeersMarkdown([row("gateway", 4.4), row("uws2", 4)], {
      startedAt: "2026-11-28T20:00:00Z",
      finishedAt: "2026-11-28T20:05:00Z",
      cores: 2,
      cpuModel: "x",
      node: "v22",
      clients: 2000,
      procs: 2,
      seconds: 20,
      quick: false,
    } as never);
    expect(md).toContain("Gateway CPU per delivery ÷ bare uWS ×2's: **1.10×**");
  });
});
