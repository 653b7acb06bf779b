// The floor: bare uWebSockets.js in one process, speaking the gateway protocol's `sub` and `pub` and
// publishing each message to a topic, with no broker, storage or checks. For compare:peers.
//   node loadtest/peers/uws/server.mjs --port 0        prints "ready <port>"
import { createRequire } from "node:module";
import { parseArgs } from "node:util";

const uws = createRequire(import.meta.url)("uWebSockets.js");
const { values: opt } = parseArgs({ options: { port: { type: "string", default: "9001" } } });
const app = uws.App();
let seq = 0;
const field = (s, key) => { const m = new RegExp(`"${key}":("(?:[^"\\\\]|\\\\.)*"|\\d+)`).exec(s); return m ? m[1] : null; };
app.ws("/ws", {
  compression: uws.DISABLED,
  maxBackpressure: 8 << 20,
  idleTimeout: 120,
  message(ws, ab) {
    const s = Buffer.from(ab).toString("utf8");
    const id = field(s, "id");
    const channel = JSON.parse(field(s, "channel") ?? '""');
    if (s.startsWith('{"op":"sub"')) { ws.subscribe(channel); ws.send(`{"op":"ok","id":${id}}`); return; }
    if (s.startsWith('{"op":"pub"')) {
      const d = s.indexOf('"data":');
      const data = s.slice(d + 7, s.length - 1);
      const ts = (performance.timeOrigin + performance.now()).toFixed(3);
      app.publish(channel, `{"op":"msg","channel":${JSON.stringify(channel)},"sub":${JSON.stringify(channel)},"seq":${++seq},"ts":${ts},"data":${data}}`, false, false);
      ws.send(`{"op":"ok","id":${id},"seq":${seq}}`);
      return;
    }
    if (s.startsWith('{"op":"ping"')) ws.send(`{"op":"pong","id":${id},"time":${(performance.timeOrigin + performance.now()).toFixed(3)}}`);
  },
});
app.listen("0.0.0.0", Number(opt.port), (t) => {
  if (!t) { console.error("listen failed"); process.exit(1); }
  console.log(`ready ${uws.us_socket_local_port(t)}`);
});
for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => process.exit(0));
