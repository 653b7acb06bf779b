// The two legs of bench:replay, shared with bench:ab.
import { connect, type NodeConnectionOptions } from "@nats-io/transport-node";
import { DeliverPolicy, jetstream } from "@nats-io/jetstream";
import WebSocket from "ws";
import { LeanSocket } from "../../subtools/src/lean/connection.js";

/** Publishes `count` messages of ~`size` bytes of JSON to one subject, 1,000 in flight at a time. */
export async function fillStream(servers: string, subject: string, count: number, size: number, opts: NodeConnectionOptions = {}): Promise<void> {
  const nc = await connect({ ...opts, servers });
  const js = jetstream(nc);
  const payload = new TextEncoder().encode(JSON.stringify({ x: "y".repeat(Math.max(0, size - 8)) }));
  for (let i = 0; i < count; i += 1_000) await Promise.all(Array.from({ length: Math.min(1_000, count - i) }, () => js.publish(subject, payload)));
  await nc.close();
}

/** The baseline: a raw nats.js ordered consumer reading the subject from the start; msgs/s. */
export async function rawRead(servers: string, subject: string, count: number, opts: NodeConnectionOptions = {}): Promise<number> {
  const nc = await connect({ ...opts, servers });
  const js = jetstream(nc);
  const c = await js.consumers.get("FANOUT_CHANNELS", { filter_subjects: [subject], deliver_policy: DeliverPolicy.All });
  const t0 = performance.now();
  let n = 0;
  await new Promise<void>((resolve) => {
    void c.consume({
      max_messages: 1_024,
      callback: (m) => {
        n++;
        if (m.info.pending === 0 && n >= count) resolve();
      },
    });
  });
  const dt = (performance.now() - t0) / 1000;
  await nc.close();
  return count / dt;
}

/** How the measuring client reads the socket: the load tools' lean engine (default) or the `ws` package. */
export type ReplayEngine = "lean" | "ws";

/** One WebSocket client replaying the channel from the start through the gateway; msgs/s. */
export function socketReplay(port: number, channel: string, count: number, engine: ReplayEngine = "lean"): Promise<number> {
  return engine === "lean" ? leanReplay(port, channel, count) : wsReplay(port, channel, count);
}

/**
 * The lean client (plain TCP, frames found in the read buffer, nothing decoded): on two shared cores the
 * measuring client competes with the gateway for CPU, and `ws` costs about twice as much per frame.
 */
function leanReplay(port: number, channel: string, count: number): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    let n = 0;
    let t0 = 0;
    const sock: LeanSocket = new LeanSocket(
      { host: "127.0.0.1", port, path: "/ws" },
      {
        open: () => {
          t0 = performance.now();
          sock.send(JSON.stringify({ op: "sub", id: 1, channel, from: "all" }));
        },
        message: (_op, buf, start) => {
          // {"op":"msg"…: counted without parsing.
          if (buf[start + 2] === 0x6f && buf[start + 7] === 0x6d && ++n === count) {
            const rate = count / ((performance.now() - t0) / 1000);
            sock.destroy();
            resolve(rate);
          }
        },
        closed: (info) => {
          if (n < count) reject(info.error ?? new Error(`replay socket closed after ${n} of ${count} messages (${info.reason})`));
        },
      },
    );
  });
}

async function wsReplay(port: number, channel: string, count: number): Promise<number> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { perMessageDeflate: false, skipUTF8Validation: true });
  await new Promise<void>((res, rej) => {
    ws.once("open", () => res());
    ws.once("error", rej);
  });
  let n = 0;
  let t0 = 0;
  const done = new Promise<void>((resolve) => {
    ws.on("message", (d: Buffer) => {
      if (d[2] === 0x6f && d[7] === 0x6d) {
        // {"op":"msg"…: count without parsing
        if (++n >= count) resolve();
      }
    });
  });
  t0 = performance.now();
  ws.send(JSON.stringify({ op: "sub", id: 1, channel, from: "all" }));
  await done;
  const dt = (performance.now() - t0) / 1000;
  ws.terminate();
  return count / dt;
}
