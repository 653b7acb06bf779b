import { describe, expect, it } from "vitest";
import { faultsAtSilences, lagAtSilences, maxLagOf, socketStatesAtSilences } from "../../chaos/lag.js";

describe("chaos lag", () => {
  it("chaos lag — the worst worker's event_loop_lag_max_ms of a metrics page", () => {
    const text = [
      "# HELP fanout_worker_state Per-worker figures",
      'fanout_worker_state{worker="1",pid="10",what="event_loop_lag_max_ms"} 12.5',
      'fanout_worker_state{worker="2",pid="11",what="event_loop_lag_max_ms"} 4100',
      'fanout_worker_state{worker="2",pid="11",what="heap_used_bytes"} 99999999',
    ].join("\n");
    expect(maxLagOf(text)).toBe(4100);
    expect(maxLagOf("# nothing")).toBeNull();
  });

  it("chaos lag — a silent stream gets its instance's worst lag and unanswered scrapes of the 8 s before", () => {
    const url = "http://127.0.0.1:4000";
    const samples = [
      { t: 1_000, url, maxLagMs: 20 },
      { t: 5_000, url, maxLagMs: 6_500 },
      { t: 7_000, url, maxLagMs: null },
      { t: 7_000, url: "http://127.0.0.1:5000", maxLagMs: 9_999 },
      { t: 12_000, url, maxLagMs: 9_000 },
    ];
    const events = [
      { t: 9_000, up: false, why: `silent: ${url}/v1/channels/a/events, 3 chunks` },
      { t: 9_500, up: false, why: "aborted" },
      { t: 9_600, up: true },
    ];
    expect(lagAtSilences(events, samples)).toEqual([{ t: 9_000, url, maxLagMs: 6_500, unanswered: 1 }]);
  });

  it("chaos lag — a silence is tied to the faults acting on its instance just before", () => {
    const urls = ["http://a", "http://b", "http://c"];
    const faults = [
      { kind: "rolling-restart", target: "gw0,gw1,gw2", startedAt: 0, endedAt: 20_000 },
      { kind: "primary-kill", target: "gw1", startedAt: 5_000, endedAt: 9_000 },
      { kind: "link-stall", target: "gw2 <-> every NATS node", startedAt: 9_000, endedAt: 11_000 },
      { kind: "worker-kill", target: "gw1 worker 123", startedAt: 30_000, endedAt: 31_000 },
    ];
    const silences = [
      { t: 10_000, url: "http://b" },
      { t: 12_000, url: "http://c" },
      { t: 60_000, url: "http://a" },
    ];
    expect(faultsAtSilences(silences, faults, urls)).toEqual({ "rolling-restart": 2, "primary-kill": 1, "link-stall": 1, none: 1 });
  });

  it("chaos lag — a rolling restart counts only during the step on the silent stream's instance", () => {
    const urls = ["http://a", "http://b", "http://c"];
    const steps = [
      { target: "gw0", startedAt: 0, endedAt: 5_000 },
      { target: "gw1", startedAt: 5_000, endedAt: 10_000 },
      { target: "gw2", startedAt: 10_000, endedAt: 15_000 },
    ];
    const faults = [{ kind: "rolling-restart", target: "gw0,gw1,gw2", startedAt: 0, endedAt: 15_000, steps }];
    // gw1 at 7 s: its step is under way. gw0 at 14 s: its step ended 9 s before (outside the 8 s window).
    // gw2 at 3 s: its step has not begun.
    const silences = [
      { t: 7_000, url: "http://b" },
      { t: 14_000, url: "http://a" },
      { t: 3_000, url: "http://c" },
    ];
    expect(faultsAtSilences(silences, faults, urls)).toEqual({ "rolling-restart": 1, none: 2 });
  });

  it("chaos lag — silent streams are counted by the TCP states of their two ends", () => {
    const events = [
      { why: "silent: http://a/v1/channels/x/events, 3 chunks", sockets: { client: ["CLOSE-WAIT recvq=0 sendq=0 127.0.0.1:5 -> 127.0.0.1:80"], server: [] } },
      { why: "silent: http://a/v1/channels/y/events, 9 chunks", sockets: { client: ["CLOSE-WAIT recvq=0 sendq=0 127.0.0.1:6 -> 127.0.0.1:80"], server: [] } },
      {
        why: "silent: http://b/v1/channels/x/events, 1 chunks",
        sockets: { client: ["ESTAB recvq=0 sendq=0 127.0.0.1:7 -> 127.0.0.1:81"], server: ["ESTAB recvq=0 sendq=0 127.0.0.1:81 -> 127.0.0.1:7 pid=42"] },
      },
      { why: "silent: http://b/v1/channels/x/events, 1 chunks", sockets: { error: "spawn ss ENOENT" } },
      { why: "end", sockets: { client: [], server: [] } },
      { why: "silent: http://c/v1/channels/x/events, 2 chunks" },
    ];
    expect(socketStatesAtSilences(events)).toEqual({ "client CLOSE-WAIT / server none": 2, "client ESTAB / server ESTAB": 1, "ss failed": 1 });
  });
});
