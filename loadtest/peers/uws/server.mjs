// The floor: bare uWebSockets.js speaking the gateway protocol's `sub` and `pub` and publishing each message
// to a topic, with no broker, storage or checks. For compare:peers and bench:tools.
//   node loadtest/peers/uws/server.mjs --port 0              one process; prints "ready <port>"
//   node loadtest/peers/uws/server.mjs --port 0 --procs 2    that many processes on one port (SO_REUSEPORT, as
//                                                            the gateway's workers), fanning out in parallel
// With several processes a `pub` goes to the primary, which numbers it (one seq for all) and hands the frame to
// every process at once; each publishes it to its own sockets, as each gateway worker does with a message
// from NATS. The ok goes back from the process that took the `pub`.
import cluster from "node:cluster";
import { createServer } from "node:net";
import { createRequire } from "node:module";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({ options: { port: { type: "string", default: "9001" }, procs: { type: "string", default: "1" } } });
const procs = Math.max(1, Number(opt.procs));
const now = () => (performance.timeOrigin + performance.now()).toFixed(3);
const msgFrame = (channel, seq, data) =>
  `{"op":"msg","channel":${JSON.stringify(channel)},"sub":${JSON.stringify(channel)},"seq":${seq},"ts":${now()},"data":${data}}`;

if (procs > 1 && cluster.isPrimary) {
  const port =
    Number(opt.port) ||
    (await new Promise((res) => {
      const s = createServer().listen(0, "0.0.0.0", () => {
        const p = s.address().port;
        s.close(() => res(p));
      });
    }));
  let seq = 0;
  let listening = 0;
  const workers = Array.from({ length: procs }, () => cluster.fork({ FLOOR_PORT: String(port) }));
  for (const w of workers) {
    w.on("message", (m) => {
      if (m.type === "listening" && ++listening === procs) console.log(`ready ${port}`);
      if (m.type === "pub") {
        const frame = msgFrame(m.channel, ++seq, m.data);
        for (const x of workers) x.send({ type: "publish", channel: m.channel, frame });
        w.send({ type: "ok", token: m.token, seq });
      }
    });
    w.on("exit", (code) => {
      console.error(`floor worker exited ${code}`);
      process.exit(1);
    });
  }
  for (const s of ["SIGTERM", "SIGINT"])
    process.on(s, () => {
      for (const w of workers) w.process.kill("SIGTERM");
      process.exit(0);
    });
} else {
  const uws = createRequire(import.meta.url)("uWebSockets.js");
  const app = uws.App();
  const several = procs > 1;
  let seq = 0;
  let nextToken = 0;
  const waiting = new Map();
  const field = (s, key) => {
    const m = new RegExp(`"${key}":("(?:[^"\\\\]|\\\\.)*"|\\d+)`).exec(s);
    return m ? m[1] : null;
  };
  if (several) {
    process.on("message", (m) => {
      if (m.type === "publish") app.publish(m.channel, m.frame, false, false);
      else if (m.type === "ok") {
        const w = waiting.get(m.token);
        waiting.delete(m.token);
        if (w && !w.ws.closed) w.ws.send(`{"op":"ok","id":${w.id},"seq":${m.seq}}`);
      }
    });
  }
  app.ws("/ws", {
    compression: uws.DISABLED,
    maxBackpressure: 8 << 20,
    idleTimeout: 120,
    close(ws) {
      ws.closed = true;
    },
    message(ws, ab) {
      const s = Buffer.from(ab).toString("utf8");
      const id = field(s, "id");
      const channel = JSON.parse(field(s, "channel") ?? '""');
      if (s.startsWith('{"op":"sub"')) {
        ws.subscribe(channel);
        ws.send(`{"op":"ok","id":${id}}`);
        return;
      }
      if (s.startsWith('{"op":"pub"')) {
        const d = s.indexOf('"data":');
        const data = s.slice(d + 7, s.length - 1);
        if (several) {
          const token = ++nextToken;
          waiting.set(token, { ws, id });
          process.send({ type: "pub", channel, data, token });
          return;
        }
        app.publish(channel, msgFrame(channel, ++seq, data), false, false);
        ws.send(`{"op":"ok","id":${id},"seq":${seq}}`);
        return;
      }
      if (s.startsWith('{"op":"ping"')) ws.send(`{"op":"pong","id":${id},"time":${now()}}`);
    },
  });
  const port = several ? Number(process.env.FLOOR_PORT) : Number(opt.port);
  app.listen("0.0.0.0", port, (t) => {
    if (!t) {
      console.error("listen failed");
      process.exit(1);
    }
    if (several) process.send({ type: "listening" });
    else console.log(`ready ${uws.us_socket_local_port(t)}`);
  });
  for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => process.exit(0));
}
