// The JavaScript SDK's runner (`centrifuge` 5.7.4 from npm, in Node with the `ws` package as its WebSocket):
// drives the SDK from JSON lines on stdin and reports what it sees as JSON lines on stdout
// (gateway/conformance/centrifuge/README.md). `--protobuf` uses the SDK's Protobuf build.
import { createInterface } from "node:readline";
import { Centrifuge as CentrifugeJson } from "centrifuge";
import { Centrifuge as CentrifugeProtobuf } from "centrifuge/build/protobuf";
import WebSocket from "ws";

const PROTOBUF = process.argv.includes("--protobuf");
const Centrifuge = PROTOBUF ? CentrifugeProtobuf : CentrifugeJson;

const write = (obj) => process.stdout.write(`${JSON.stringify(obj)}\n`);
/** A command's data as the SDK takes it: JSON values over JSON, bytes over Protobuf. */
const encode = (data) => (PROTOBUF ? new TextEncoder().encode(JSON.stringify(data ?? null)) : data);
const decode = (data) => {
  if (!(data instanceof Uint8Array)) return data;
  const text = new TextDecoder().decode(data);
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};
/** The Protobuf build gives offsets as protobufjs Longs. */
const num = (v) => (v === undefined || v === null ? v : Number(v));

let gen = 0; // the scenario's generation: events of an older one are dropped
let client;
let subs = new Map();
let last = new Map(); // per sub, the offset of its last publication
let token = ""; // what the token getter hands out (setToken)
let subTokens = new Map(); // per channel, what a sub's token getter hands out (setSubToken)

const event = (g, obj) => {
  if (g === gen) write(obj);
};

function connect(cmd, g) {
  const c = new Centrifuge(cmd.url, {
    websocket: WebSocket,
    token: cmd.token,
    ...(cmd.refresh
      ? {
          getToken: async () => {
            event(g, { event: "tokenRequested" });
            return token;
          },
        }
      : {}),
    minReconnectDelay: 50,
    maxReconnectDelay: 500,
    timeout: 15_000,
  });
  c.on("connecting", (e) => event(g, { event: "connecting", code: e.code, reason: e.reason }));
  c.on("disconnected", (e) => event(g, { event: "disconnected", code: e.code, reason: e.reason }));
  c.on("error", (e) => event(g, { event: "error", message: String(e.error?.message ?? e.error) }));
  client = c;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("not connected in 15 s")), 15_000);
    c.on("connected", (e) => {
      event(g, { event: "connected", client: e.client });
      clearTimeout(timer);
      resolve({ client: e.client });
    });
    c.once("disconnected", (e) => {
      clearTimeout(timer);
      reject(Object.assign(new Error(e.reason), { code: e.code }));
    });
    c.connect();
  });
}

function subscribe(cmd, g) {
  const name = cmd.sub;
  const sub = client.newSubscription(cmd.channel, {
    recoverable: cmd.recoverable === true,
    positioned: cmd.positioned === true,
    joinLeave: cmd.joinLeave === true,
    ...(cmd.subToken
      ? {
          getToken: async () => {
            event(g, { event: "subTokenRequested", sub: name });
            return subTokens.get(cmd.channel) ?? "";
          },
        }
      : {}),
  });
  sub.on("subscribing", (e) => event(g, { event: "subscribing", sub: name, code: e.code, reason: e.reason }));
  sub.on("subscribed", (e) => {
    const ev = { event: "subscribed", sub: name, wasRecovering: e.wasRecovering, recovered: e.recovered, recoverable: e.recoverable, positioned: e.positioned };
    if (e.streamPosition) Object.assign(ev, { offset: num(e.streamPosition.offset), epoch: e.streamPosition.epoch });
    event(g, ev);
  });
  sub.on("unsubscribed", (e) => event(g, { event: "unsubscribed", sub: name, code: e.code, reason: e.reason }));
  sub.on("error", (e) => event(g, { event: "subError", sub: name, message: String(e.error?.message ?? e.error) }));
  sub.on("publication", (e) => {
    const seq = num(e.offset);
    const ev = { event: "message", sub: name, channel: e.channel, seq, data: decode(e.data) };
    if (last.has(name)) ev.jump = seq - last.get(name);
    last.set(name, seq);
    event(g, ev);
  });
  sub.on("join", (e) => event(g, { event: "join", sub: name, user: e.info.user, client: e.info.client }));
  sub.on("leave", (e) => event(g, { event: "leave", sub: name, user: e.info.user, client: e.info.client }));
  subs.set(name, sub);
  sub.subscribe();
  return {};
}

async function reset() {
  gen += 1;
  const old = client;
  client = undefined;
  subs = new Map();
  last = new Map();
  token = "";
  subTokens = new Map();
  if (old) {
    const closed = new Promise((r) => (old.state === "disconnected" ? r() : old.once("disconnected", r)));
    old.disconnect();
    await closed;
  }
  return {};
}

async function handle(cmd) {
  const g = gen;
  switch (cmd.cmd) {
    case "connect":
      return connect(cmd, g);
    case "setToken":
      token = cmd.token;
      return {};
    case "setSubToken":
      subTokens.set(cmd.channel, cmd.token);
      return {};
    case "reset":
    case "close":
      return reset();
  }
  if (!client) throw new Error("not connected");
  switch (cmd.cmd) {
    case "subscribe":
      return subscribe(cmd, g);
    case "unsubscribe": {
      const sub = subs.get(cmd.sub);
      if (!sub) throw new Error("no such sub");
      sub.unsubscribe();
      return {};
    }
    case "publish":
      await client.publish(cmd.channel, encode(cmd.data));
      return {};
    case "presence": {
      const p = await client.presence(cmd.channel);
      return {
        users: Object.values(p.clients)
          .map((i) => i.user)
          .sort(),
      };
    }
    case "presenceStats": {
      const s = await client.presenceStats(cmd.channel);
      return { numClients: s.numClients, numUsers: s.numUsers };
    }
    case "history": {
      const h = await client.history(cmd.channel, { limit: cmd.limit ?? 0, reverse: cmd.reverse === true });
      return { publications: h.publications.map((p) => ({ offset: num(p.offset), data: decode(p.data) })), offset: num(h.offset), epoch: h.epoch };
    }
    case "rpc": {
      const r = await client.rpc(cmd.method, encode(cmd.data));
      return { data: decode(r.data) };
    }
  }
  throw new Error(`unknown command ${cmd.cmd}`);
}

async function answer(cmd) {
  try {
    write({ id: cmd.id, ok: true, result: await handle(cmd) });
  } catch (e) {
    // The SDK rejects with the server's error ({code, message, temporary}); anything else is the runner's.
    const code = typeof e?.code === "number" && e.code >= 100 ? String(e.code) : "runner";
    write({ id: cmd.id, ok: false, error: { code, temporary: e?.temporary === true, message: String(e?.message ?? e) } });
  }
}

write({ event: "adapter", reset: true });
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  if (cmd.cmd === "close") {
    await answer(cmd);
    process.exit(0);
  }
  // Each command on its own: a step marked async leaves its command in flight.
  void answer(cmd);
}
