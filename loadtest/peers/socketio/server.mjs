// A fan-out server users would pick instead: Socket.IO 4 over node:cluster workers, the workers joined by
// @socket.io/redis-adapter, WebSocket transport only (no polling, so no sticky sessions). Clients send
// `sub` (join the room of a channel, acked) and `pub` (emit `msg` to the room, acked). For compare:peers.
//   node loadtest/peers/socketio/server.mjs --port 0 --workers 2 --redis-url redis://127.0.0.1:6379
// Prints "ready <port>" once every worker listens.
import cluster from "node:cluster";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

const { values: opt } = parseArgs({
  options: {
    port: { type: "string", default: "3000" },
    workers: { type: "string", default: "2" },
    "redis-url": { type: "string", default: "redis://127.0.0.1:6379" },
  },
});

if (cluster.isPrimary) {
  const workers = Number(opt.workers);
  let listening = 0;
  for (let i = 0; i < workers; i++) {
    const w = cluster.fork();
    w.on("message", (m) => {
      if (m?.type === "listening" && ++listening === workers) console.log(`ready ${m.port}`);
    });
  }
  cluster.on("exit", (w, code, signal) => {
    console.error(`socket.io worker ${w.process.pid} exited (${signal ?? code})`);
    process.exit(1);
  });
  for (const s of ["SIGTERM", "SIGINT"])
    process.on(s, () => {
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill("SIGTERM");
      process.exit(0);
    });
} else {
  const { Server } = await import("socket.io");
  const { createAdapter } = await import("@socket.io/redis-adapter");
  const { createClient } = await import("redis");
  const pub = createClient({ url: opt["redis-url"] });
  const sub = pub.duplicate();
  pub.on("error", (e) => console.error("redis:", e.message));
  sub.on("error", (e) => console.error("redis:", e.message));
  await Promise.all([pub.connect(), sub.connect()]);
  const http = createServer();
  const io = new Server(http, { transports: ["websocket"], serveClient: false, adapter: createAdapter(pub, sub) });
  io.on("connection", (socket) => {
    socket.on("sub", (channel, ack) => {
      socket.join(String(channel));
      if (typeof ack === "function") ack(true);
    });
    socket.on("pub", (channel, data, ack) => {
      io.to(String(channel)).emit("msg", data);
      if (typeof ack === "function") ack(true);
    });
  });
  http.listen(Number(opt.port), "0.0.0.0", () => process.send?.({ type: "listening", port: http.address().port }));
}
