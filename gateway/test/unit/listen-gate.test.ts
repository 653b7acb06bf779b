import { describe, expect, it } from "vitest";
import { CAP_AUTO, CAP_OFF } from "../../src/config/sections/server.js";
import { ListenGate, lowWaterOf, openFilesLimit, workerCap } from "../../src/limits/listen-gate.js";
import { Admission } from "../../src/limits/admission.js";
import { createGuardMetrics } from "../../src/limits/metrics.js";
import { loadConfig } from "../../src/config/config.js";
import { sectionsOf } from "../../src/config/sections/index.js";
import client from "prom-client";

/** A gate over fake listeners that record what they were told; `opens` says whether listening again works. */
function gateOf(cap: number, opens = () => true) {
  const calls: string[] = [];
  const changes: string[] = [];
  const gate = new ListenGate(
    cap,
    {
      close: () => void calls.push("close"),
      open: () => (calls.push("open"), opens()),
    },
    (state, n) => void changes.push(`${state}@${n}`),
  );
  return { gate, calls, changes };
}

describe("listen gate — a worker at its connection cap stops listening", () => {
  it("listen gate — closes at the cap, stays closed above the low-water mark, listens again at it", () => {
    const { gate, calls, changes } = gateOf(50);
    expect(gate.lowWater).toBe(45);
    for (let n = 1; n < 50; n++) gate.counted(n);
    expect(calls).toEqual([]);
    gate.counted(50);
    expect(calls).toEqual(["close"]);
    expect(gate.state).toBe("full");
    gate.counted(51); // accepted before the close: still full, closed once
    for (let n = 50; n > 45; n--) gate.counted(n);
    expect(calls).toEqual(["close"]);
    gate.counted(45);
    expect(calls).toEqual(["close", "open"]);
    expect(gate.state).toBe("listening");
    expect(changes).toEqual(["full@50", "listening@45"]);
  });

  it("listen gate — a listen that fails is tried again at the next change; a stopped gate never listens", () => {
    let ok = false;
    const { gate, calls } = gateOf(10, () => ok);
    gate.counted(10);
    gate.counted(9); // the low-water mark of 10: the listen fails
    expect(gate.state).toBe("full");
    ok = true;
    gate.counted(8);
    expect(gate.state).toBe("listening");
    expect(calls).toEqual(["close", "open", "open"]);
    gate.counted(10);
    gate.stop();
    gate.counted(0);
    expect(calls).toEqual(["close", "open", "open", "close"]);
    expect(gate.state).toBe("stopped");
  });

  it("listen gate — the low-water mark is 10 % under the cap, at least one", () => {
    expect([lowWaterOf(1), lowWaterOf(5), lowWaterOf(19_000), lowWaterOf(1_000_000)]).toEqual([0, 4, 17_100, 900_000]);
  });
});

describe("listen gate — WORKER_MAX_CONNECTIONS", () => {
  const limits = (n: string) =>
    `Limit                     Soft Limit           Hard Limit           Units\nMax open files            ${n}                ${n}                files\n`;

  it("listen gate — auto is the open-files limit less 5 % (at least 512); off and unknown limits give no cap", () => {
    expect(openFilesLimit(limits("20000"))).toBe(20_000);
    expect(openFilesLimit(limits("unlimited"))).toBeUndefined();
    expect(openFilesLimit("")).toBeUndefined();
    expect(workerCap(CAP_AUTO, 20_000)).toBe(19_000);
    expect(workerCap(CAP_AUTO, 1_048_576)).toBe(996_147);
    expect(workerCap(CAP_AUTO, 4_096)).toBe(3_584);
    expect(workerCap(CAP_AUTO, 500)).toBeUndefined();
    expect(workerCap(CAP_AUTO, undefined)).toBeUndefined();
    expect(workerCap(CAP_OFF, 20_000)).toBeUndefined();
    expect(workerCap(50, 20_000)).toBe(50);
  });

  it("listen gate — the setting takes auto, off or a number, and refuses anything else", () => {
    const server = (v?: string) => sectionsOf(loadConfig([], v === undefined ? {} : { WORKER_MAX_CONNECTIONS: v }).config).server;
    expect(server().workerMaxConnections).toBe(CAP_AUTO);
    expect(server("off").workerMaxConnections).toBe(CAP_OFF);
    expect(server("50").workerMaxConnections).toBe(50);
    expect(() => server("0")).toThrow(/WORKER_MAX_CONNECTIONS.*auto, off, or a number/);
  });

  it("listen gate — the admission's count drives it: reserved, cancelled and closed connections of every door", () => {
    const config = sectionsOf(loadConfig([], { MAX_CONNECTIONS_PER_IP: "-1", CONNECT_RATE_PER_IP: "-1" }).config).limits;
    const admission = new Admission(config, createGuardMetrics(new client.Registry()));
    const { gate, calls } = gateOf(3);
    admission.watch((n) => gate.counted(n));
    const page = { origin: "", host: "" };
    for (const ip of ["a", "b", "c"]) expect(admission.reserve(ip, page)).toBeUndefined();
    expect(calls).toEqual(["close"]);
    admission.cancel("a"); // 2 = the low-water mark of 3
    expect(calls).toEqual(["close", "open"]);
    admission.opened("b");
    admission.closed("b");
    expect(admission.connections).toBe(1);
  });
});
