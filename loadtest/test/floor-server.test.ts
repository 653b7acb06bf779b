// The floor server of compare:peers and bench:tools (bare uWebSockets.js, loadtest/peers/uws/server.mjs): in one
// process and in several sharing a port, every subscriber gets every published message once, numbered by one
// sequence, and several processes really share the sockets.
import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import WebSocket from "ws";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "#testkit/wait.js";
import { connectionInodes, pidsHoldingInodes } from "#testkit/proc-sockets.js";

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

describe("floor server — bare uWS for compare:peers and bench:tools", () => {
  for (const procs of [1, 2]) {
    it(`floor server — ${procs} process${procs > 1 ? "es" : ""}: every subscriber gets every message once, in one seq order`, async () => {
      const port = await start(procs);
      const { socks, seqs } = await subscribers(port, "floor.t", 24);
      expect(connectionInodes(port)).toHaveLength(24);
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
    const workers = execFileSync("pgrep", ["-P", String(proc!.pid)], { encoding: "utf8" })
      .trim()
      .split("\n")
      .map(Number);
    const inodes = connectionInodes(port);
    const held = workers.map((pid) => inodes.filter((i) => pidsHoldingInodes([pid], [i]).length > 0).length);
    expect(held).toHaveLength(2);
    expect(held[0]! + held[1]!).toBe(40);
    expect(Math.min(...held)).toBeGreaterThan(0);
    for (const ws of socks) ws.terminate();
  });
});
