// The floor server of compare:peers and bench:tools (bare uWebSockets.js, loadtest/peers/uws/server.mjs): in one
// process and in several sharing a port, every subscriber gets every published message once, numbered by one
// sequence, and several processes really share the sockets.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { resolve } from "node:path";
import WebSocket from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../gateway/test/support/wait.js";

const SERVER = resolve(process.cwd(), "loadtest/peers/uws/server.mjs");
let proc: ChildProcess | undefined;

afterEach(async () => {
  if (proc && proc.exitCode === null) {
    const gone = new Promise((r) => proc!.once("exit", r));
    proc.kill("SIGTERM");
    await gone;
  }
});

async function start(procs: number): Promise<number> {
  proc = spawn(process.execPath, [SERVER, "--port", "0", "--procs", String(procs)], { stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  proc.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  return waitFor(() => Number(/ready (\d+)/.exec(out)?.[1]) || undefined, { what: "floor server ready" });
}

/** `n` subscribers of `channel`; each collects the seqs of the msg frames it gets. */
async function subscribers(port: number, channel: string, n: number): Promise<{ socks: WebSocket[]; seqs: number[][] }> {
  const seqs: number[][] = [];
  const socks = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
      seqs[i] = [];
      await new Promise((r, j) => ws.once("open", r).once("error", j));
      const ok = new Promise((r) => ws.once("message", r));
      ws.on("message", (d: Buffer) => {
        const f = JSON.parse(d.toString()) as { op: string; seq: number };
        if (f.op === "msg") seqs[i]!.push(f.seq);
      });
      ws.send(JSON.stringify({ op: "sub", id: 1, channel }));
      await ok;
      return ws;
    }),
  );
  return { socks, seqs };
}

/** Publishes `count` messages through `ws` one after another; returns the seqs the oks carried. */
async function publish(ws: WebSocket, channel: string, count: number): Promise<number[]> {
  const oks: number[] = [];
  for (let i = 0; i < count; i++) {
    const ok = new Promise<number>((r) => {
      const on = (d: Buffer) => {
        const f = JSON.parse(d.toString()) as { op: string; id: number; seq: number };
        if (f.op === "ok" && f.id === 100 + i) {
          ws.off("message", on);
          r(f.seq);
        }
      };
      ws.on("message", on);
    });
    ws.send(JSON.stringify({ op: "pub", id: 100 + i, channel, data: { i } }));
    oks.push(await ok);
  }
  return oks;
}

/** Established TCP connections whose local port is `port` (server side), from /proc/net/tcp; only those of `pid` if given. */
function socketsOnPort(port: number, pid?: number): number {
  const hex = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  const mine = pid === undefined ? undefined : socketInodes(pid);
  return readFileSync("/proc/net/tcp", "utf8")
    .split("\n")
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f[1]?.endsWith(hex) && f[3] === "01" && (!mine || mine.has(f[9]!))).length;
}

function socketInodes(pid: number): Set<string> {
  const out = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const m = /socket:\[(\d+)\]/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) out.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

describe("floor server — bare uWS for compare:peers and bench:tools", () => {
  for (const procs of [1, 2]) {
    it(`floor server — ${procs} process${procs > 1 ? "es" : ""}: every subscriber gets every message once, in one seq order`, async () => {
      const port = await start(procs);
      const { socks, seqs } = await subscribers(port, "floor.t", 24);
      expect(socketsOnPort(port)).toBe(24);
      const publisher = (await subscribers(port, "floor.other", 1)).socks[0]!;
      const oks = await publish(publisher, "floor.t", 5);
      expect(oks).toEqual([1, 2, 3, 4, 5]);
      await waitFor(() => seqs.every((s) => s.length === 5), { what: "every message at every subscriber" });
      for (const s of seqs) expect(s).toEqual([1, 2, 3, 4, 5]);
      for (const ws of [...socks, publisher]) ws.terminate();
    });
  }

  it("floor server — two processes share the port's sockets between them", async () => {
    const port = await start(2);
    const { socks } = await subscribers(port, "floor.share", 40);
    const workers = execFileSync("pgrep", ["-P", String(proc!.pid)], { encoding: "utf8" }).trim().split("\n").map(Number);
    const held = workers.map((pid) => socketsOnPort(port, pid));
    expect(held).toHaveLength(2);
    expect(held[0]! + held[1]!).toBe(40);
    expect(Math.min(...held)).toBeGreaterThan(0);
    for (const ws of socks) ws.terminate();
  });
});
