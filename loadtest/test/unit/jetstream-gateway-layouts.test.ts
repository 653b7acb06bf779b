// bench:jetstream's gateway leg of the layout rows, in process: the namespaces file it writes (read back by
// the gateway's own reader and routing), the streams it checks, the subscribers' rates, and the report's
// app/one table.
import { describe, expect, it } from "vitest";
import { parseNamespaces } from "../../../gateway/src/namespaces/file.js";
import { NamespaceRoutes } from "../../../gateway/src/namespaces/routing.js";
import { deliveryRates, expectedStreamMessages, layoutRows, podApp, podChannel, rowStreams, streamMismatches } from "../../bench/jetstream/layouts.js";
import { podSubject } from "../../bench/jetstream/matrix.js";
import { FULL } from "../../bench/jetstream/options.js";
import { renderMarkdown, type RunMeta } from "../../bench/jetstream/report.js";
import type { Rates, Row } from "../../bench/jetstream/rows.js";

describe("bench:jetstream gateway layouts — the namespaces file", () => {
  it("gateway layouts — layout app gives each pod's app prefix a namespace and stream the gateway routes its channel to", () => {
    const rs = rowStreams("app", 6, 7, "file", 3);
    const specs = parseNamespaces(JSON.stringify(rs.namespaces), "json");
    expect(specs.map((s) => [s.name, s.prefix, s.stream, s.storage, s.replicas])).toEqual(
      [1, 2, 3, 4, 5, 6].map((i) => [`app${i}`, `app${i}`, `GWL7_APP${i}`, "file", 3]),
    );
    const routes = new NamespaceRoutes(specs.map((s) => ({ name: s.name, tokens: s.prefix.split(".") })));
    for (let p = 0; p < 6; p++) expect(routes.ofChannel(podChannel(p))?.name, podChannel(p)).toBe(podApp(p));
    expect(rs.all).toEqual(["GWL7", ...specs.map((s) => s.stream)]);
    expect(rs.subjectPrefix).toBe("gwl7");
  });

  it("gateway layouts — layout one writes no namespaces and uses the users' subjects as channels", () => {
    const rs = rowStreams("one", 6, 8, "memory", 1);
    expect(rs.namespaces).toBeNull();
    expect(rs.all).toEqual(["GWL8"]);
    const channels = Array.from({ length: 6 }, (_, p) => podChannel(p));
    expect(new Set(channels).size).toBe(6);
    channels.forEach((c, p) => expect(`default.${c}`).toBe(podSubject("one", p)));
    expect(channels.slice(0, 4)).toEqual(["app1.bench1.subj.v1", "app2.bench2.subj.v1", "app3.bench3.subj.v1", "app4.bench1.subj.v1"]);
  });

  it("gateway layouts — rows numbered apart never share a stream or subject prefix", () => {
    const a = rowStreams("app", 3, 1, "file", 3);
    const b = rowStreams("app", 3, 2, "file", 3);
    expect(a.all.filter((n) => b.all.includes(n))).toEqual([]);
    expect(a.subjectPrefix).not.toBe(b.subjectPrefix);
  });
});

describe("bench:jetstream gateway layouts — checks and rates", () => {
  it("gateway layouts — every message in the one stream, or each pod's in its app's stream and none in the default", () => {
    const one = rowStreams("one", 3, 1, "file", 3);
    expect([...expectedStreamMessages(one, 3, 102)]).toEqual([["GWL1", 306]]);
    const app = rowStreams("app", 3, 2, "file", 3);
    const want = expectedStreamMessages(app, 3, 102);
    expect([...want]).toEqual([
      ["GWL2", 0],
      ["GWL2_APP1", 102],
      ["GWL2_APP2", 102],
      ["GWL2_APP3", 102],
    ]);
    expect(streamMismatches(want, new Map(want))).toEqual([]);
    const got = new Map<string, number | undefined>([...want, ["GWL2", 102], ["GWL2_APP1", 0], ["GWL2_APP3", undefined]]);
    expect(streamMismatches(want, got)).toEqual([
      "stream GWL2 holds 102 messages, not 0",
      "stream GWL2_APP1 holds 0 messages, not 102",
      "stream GWL2_APP3 holds nothing (missing) messages, not 102",
    ]);
  });

  it("gateway layouts — subscriber rates per subscriber over the pods, deliveries/s added", () => {
    const r = deliveryRates([
      { clients: 10, received: 10_000, windowMs: 5_000 },
      { clients: 10, received: 10_000, windowMs: 4_000 },
    ]);
    expect(r.clients).toBe(20);
    expect(r.min).toBeCloseTo(200);
    expect(r.max).toBeCloseTo(250);
    expect(r.avg).toBeCloseTo(225);
    expect(r.aggregate).toBeCloseTo(4_500);
  });

  it("gateway layouts — both pairs of the users' layout rows, one stream first in odd rounds and a stream per app in even ones", () => {
    const order = (round: number): Array<[string, string, number]> => layoutRows(round).map((s) => [s.workload, s.layout, s.pods]);
    expect(order(1)).toEqual([
      ["000.one-10k-r3-sync-3", "one", 3],
      ["000.app-10k-r3-sync-3", "app", 3],
      ["000.one-10k-r3-sync-6", "one", 6],
      ["000.app-10k-r3-sync-6", "app", 6],
    ]);
    expect(order(2)).toEqual([order(1)[1], order(1)[0], order(1)[3], order(1)[2]]);
    expect(order(3)).toEqual(order(1));
    for (const s of layoutRows(1)) expect([s.size, s.replicas, s.publish, s.storage]).toEqual([10240, 3, "sync", "file"]);
  });
});

describe("bench:jetstream gateway layouts — the report", () => {
  const rates = (avg: number, clients: number): Rates => ({ clients, min: avg, avg, max: avg, aggregate: avg * clients });
  const row = (workload: string, round: number, pub: number, sub: number, pods = 3): Row => ({
    workload,
    seed: "000",
    target: "cluster",
    path: "gateway WS",
    config: "3 × (2 pub + 10 sub)",
    commands: [],
    pub: rates(pub, pods * 2),
    sub: rates(sub, pods * 10),
    value: pub,
    metric: "pub msgs/s per publisher (avg)",
    status: "ok",
    lines: [],
    round,
    gatewayCpuPct: 80,
  });
  const meta: RunMeta = {
    startedAt: new Date("2026-11-25T15:00:00Z"),
    finishedAt: new Date("2026-11-25T15:10:00Z"),
    quick: false,
    targets: ["cluster"],
    cores: 2,
    cpu: "test",
    node: "v20",
    natscli: "v0.5.1",
    natsServer: "v2",
    counts: FULL,
    rounds: 2,
    maxLoad: 1,
    medianLoad: 1,
    latencyNote: null,
  };

  it("gateway layouts — app/one is the median of the per-round ratios, beside the users' 1.19", () => {
    const rows = [
      row("000.one-10k-r3-sync-3", 1, 100, 1_000),
      row("000.app-10k-r3-sync-3", 1, 150, 1_200),
      row("000.one-10k-r3-sync-3", 2, 120, 1_000),
      row("000.app-10k-r3-sync-3", 2, 156, 1_400),
    ];
    const md = renderMarkdown(rows, meta);
    const section = md.slice(md.indexOf("## Seed 000 through the gateway"));
    const line = section.split("\n").find((l) => l.startsWith("| 3-node cluster |"));
    // Publish 1.50 and 1.30 → 1.40; deliveries (per subscriber) 1.20 and 1.40 → 1.30; representatives are the lower-median rounds.
    expect(line).toBe("| 3-node cluster | 3 | 100 | 150 | 1.40 (1.30–1.50) | 1.19 | 30,000 | 36,000 | 1.30 (1.20–1.40) | 80 % / 80 % |");
    // The ratio table above gets a gateway column.
    expect(md).toContain("| stream per app / one stream, 3 pods (10 KB sync, pub per publisher) | 1.19 | 1.40 (1.30–1.50) |");
  });

  it("gateway layouts — a failed row shows its error and no ratio", () => {
    const failed: Row = { ...row("000.app-10k-r3-sync-6", 1, 0, 0, 6), status: "failed", note: "subscribers missed messages" };
    delete failed.value;
    const md = renderMarkdown([row("000.one-10k-r3-sync-6", 1, 100, 1_000, 6), failed], { ...meta, rounds: 1 });
    const line = md.split("\n").find((l) => l.startsWith("| 3-node cluster | 6 |"));
    expect(line).toContain("failed: subscribers missed messages");
    expect(line).toContain("| — | 1.78 |");
  });
});
