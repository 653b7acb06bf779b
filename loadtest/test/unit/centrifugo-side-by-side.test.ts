// The pure parts of `npm run compare:centrifugo`: the report's table and differences, and how the Centrifugo
// side's backend answers for the gateway's token rights.
import { describe, expect, it } from "vitest";
import { differenceOf, renderSideBySide, type Outcome } from "../../compare/centrifugo-report.js";
import { backendAnswer, centrifugoConfig, grants } from "../../../gateway/conformance/centrifuge/centrifugo-harness.js";

const o = (scenario: string, server: Outcome["server"], ok: boolean, extra: Partial<Outcome> = {}): Outcome => ({
  scenario,
  sdk: "centrifuge-go 0.12.1, JSON",
  server,
  ok,
  ms: 1234,
  ...extra,
});
const META = {
  command: "npm run bench -- centrifugo",
  date: "2026-11-28 12:00 UTC",
  gateway: "this checkout",
  centrifugo: "Centrifugo v6.9.1",
  load: "1.00, 1.00, 1.00",
  seconds: 90,
  faults: { publish: "the server API's publish" },
  explained: { "recover-3000": "Centrifugo recovers at most 300." },
};

describe("compare:centrifugo — report", () => {
  it("report — one row per scenario and SDK with both outcomes and the difference; the differences are explained, an unexplained one says so", () => {
    const text = renderSideBySide(
      [
        o("order", "gateway", true),
        o("order", "centrifugo", true),
        o("recover-3000", "gateway", true),
        o("recover-3000", "centrifugo", false, {
          why: "recover-3000 step 11: no subscribed event matching {}",
          seen: ['{"event":"subscribed","recovered":false}'],
        }),
        o("epoch", "gateway", false, { why: "epoch step 6: timed out" }),
        o("epoch", "centrifugo", true),
      ],
      META,
    );
    expect(text).toContain("| order | centrifuge-go 0.12.1, JSON | pass (1.2 s) | pass (1.2 s) | same |");
    expect(text).toContain(
      '| recover-3000 | centrifuge-go 0.12.1, JSON | pass (1.2 s) | fail: recover-3000 step 11: no subscribed event matching {}. Seen: `{"event":"subscribed","recovered":false}` | only the gateway passes |',
    );
    expect(text).toContain("| epoch | centrifuge-go 0.12.1, JSON | fail: epoch step 6: timed out. | pass (1.2 s) | only Centrifugo passes |");
    expect(text).toContain("3 rows: 1 the same, 1 only the gateway passes, 1 only Centrifugo passes, 0 both fail.");
    expect(text).toContain("- **recover-3000**: Centrifugo recovers at most 300.");
    expect(text).toContain("- **epoch**: not explained yet");
    expect(text).toContain("- **publish**: the server API's publish");
  });

  it("report — a cell with a pipe stays one cell", () => {
    const text = renderSideBySide([o("x", "gateway", false, { why: "a | b" }), o("x", "centrifugo", false, { why: "c" })], META);
    expect(text).toContain("| x | centrifuge-go 0.12.1, JSON | fail: a \\| b. | fail: c. | both fail |");
  });

  it("difference — missing outcomes count as failures", () => {
    expect(differenceOf(undefined, undefined)).toBe("both fail");
    expect(differenceOf(o("x", "gateway", true), undefined)).toBe("only the gateway passes");
  });
});

describe("compare:centrifugo — the Centrifugo side's backend", () => {
  it("grants — the gateway's token rights as NATS patterns over gateway channels", () => {
    expect(grants(undefined, "conf.a.b")).toBe(true);
    expect(grants(["conf.open.>"], "conf.open.x")).toBe(true);
    expect(grants(["conf.open.>"], "conf.open")).toBe(false);
    expect(grants(["conf.open.>"], "conf.a.b")).toBe(false);
    expect(grants(["conf.*"], "conf.a")).toBe(true);
    expect(grants(["conf.*"], "conf.a.b")).toBe(false);
    expect(grants([], "conf.a")).toBe(false);
  });

  it("hooks — subscribe and publish answer 103 outside the token's meta rights; RPC echoes as the gateway's hook does", () => {
    const call = (path: string, body: Record<string, unknown>) => backendAnswer({ path, body, raw: "", headers: {} }).body;
    expect(call("/subscribe", { channel: "conf:x.y", meta: { sub: ["conf.open.>"] } })).toEqual({ error: { code: 103, message: "permission denied" } });
    expect(call("/subscribe", { channel: "conf:open.y", meta: { sub: ["conf.open.>"] } })).toMatchObject({
      result: { override: { force_recovery: { value: true } } },
    });
    expect(call("/publish", { channel: "conf:x", meta: { pub: [] } })).toEqual({ error: { code: 103, message: "permission denied" } });
    expect(call("/rpc", { method: "conf.echo", user: "u", data: { x: 1 }, meta: { rpc: ["conf.echo"] } })).toEqual({
      result: { data: { method: "conf.echo", user: "u", data: { x: 1 } } },
    });
    expect(call("/rpc", { method: "conf.echo", meta: {} })).toEqual({ error: { code: 103, message: "permission denied" } });
  });

  it("config — the namespace conf allows what the scenarios use; the recovery limit stays Centrifugo's default", () => {
    const c = centrifugoConfig(8000, (p) => `http://backend${p}`) as { client: Record<string, unknown>; channel: { namespaces: Record<string, unknown>[] } };
    expect(c.client.recovery_max_publication_limit).toBeUndefined();
    expect(c.channel.namespaces[0]).toMatchObject({ name: "conf", presence: true, join_leave: true, allow_recovery: true, allowed_delta_types: ["fossil"] });
  });
});
