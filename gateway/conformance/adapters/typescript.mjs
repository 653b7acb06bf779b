// The TypeScript SDK as a client-under-test of the conformance suite: reads commands as JSON lines on stdin,
// answers each (same id) and reports the client's events and messages as JSON lines on stdout (README.md
// beside this folder describes the line protocol; stdout carries only its lines). It loads the SDK as the gateway's package exports it
// (`fanout-gateway/client`) and serves it (/client.js): the one-file bundle that `npm run build` makes.
import { createInterface } from "node:readline";
import WebSocket from "ws";
import { GatewayClient } from "../../../dist/gateway/client/client.js";

// `--msgpack`: the SDK speaks fanout.v1.msgpack with @msgpack/msgpack's encode and decode.
const msgpack = process.argv.includes("--msgpack") ? await import("@msgpack/msgpack") : undefined;
// `--global-websocket`: the host's own WebSocket (Node 22's, undici's) instead of the ws package.
const WebSocketImpl = process.argv.includes("--global-websocket") ? globalThis.WebSocket : WebSocket;
if (!WebSocketImpl) throw new Error(`--global-websocket: Node ${process.version} has no global WebSocket`);

let client;
let token;
/** Subscription tokens by channel (`setSubToken`), handed out by getSubscriptionToken when the connect asked for `subTokens`. */
const subTokens = new Map();
const subs = new Map();
// Bumped by `reset`: what a client of an earlier scenario still reports is dropped, never written.
let generation = 0;
const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
/** `out` for the scenario now playing only. */
const scoped = () => {
  const mine = generation;
  return (o) => mine === generation && out(o);
};
// This adapter plays many scenarios in one process: it answers `reset` (README.md "Reuse").
out({ event: "adapter", reset: true });
const errorOf = (e) => ({
  code: e?.code ?? "internal",
  temporary: e?.temporary ?? true,
  message: e?.message ?? String(e),
  ...(e?.appCode !== undefined ? { appCode: e.appCode } : {}),
});

const commands = {
  async connect(c) {
    token = c.token;
    const emit = scoped();
    client = new GatewayClient(c.url, {
      WebSocket: WebSocketImpl,
      ...(msgpack ? { msgpack: { encode: msgpack.encode, decode: msgpack.decode } } : {}),
      ...(c.getToken ? { getToken: () => token } : c.token ? { token: c.token } : {}),
      ...(c.subTokens ? { getSubscriptionToken: (channel) => subTokens.get(channel) } : {}),
      ...c.options,
      onAutoMessage: (m) => report("auto", m, emit),
    });
    for (const type of ["connecting", "connected", "disconnected", "resubscribed", "autoSubscribed", "gap", "tokenExpired", "error"]) {
      client.on(type, (e) =>
        emit(
          type === "error" ? { event: "error", code: e.error.code, temporary: e.error.temporary, channel: e.channel } : { event: type, ...without(e, "type") },
        ),
      );
    }
    await client.connect();
  },
  async subscribe(c) {
    const emit = scoped();
    const nakFirst = c.onMessage === "nakFirst";
    const sub = client.subscribe(
      c.channel,
      (m) => {
        // Settle first, then report: a reported message's ack or nak is already on the wire.
        if (nakFirst) {
          if (m.redelivered) m.ack();
          else m.nak();
        }
        report(c.sub, m, emit);
      },
      {
        ...(c.from !== undefined ? { from: c.from } : {}),
        ...(c.durable ? { durable: c.durable, ack: c.ack === true } : {}),
        ...(nakFirst ? { autoAck: false } : {}),
        ...(c.presence !== undefined
          ? { presence: c.presence, onPresence: (e) => emit({ event: "presence", sub: c.sub, action: e.type, ...without(e, "type") }) }
          : {}),
        ...(c.info !== undefined ? { info: c.info } : {}),
        ...(c.delta !== undefined ? { delta: c.delta } : {}),
      },
    );
    subs.set(c.sub, sub);
    return await sub.ready;
  },
  unsubscribe: (c) => void subs.get(c.sub)?.unsubscribe(),
  publish: (c) => client.publish(c.channel, payloadOf(c), { ...(c.msgId ? { msgId: c.msgId } : {}), ...(c.type ? { type: c.type } : {}) }),
  async publishBatch(c) {
    const results = await client.publishBatch(c.items.map((item) => ({ ...without(item, "bytes"), data: payloadOf(item) })));
    return { results: results.map((r) => ("error" in r ? { error: errorOf(r.error) } : r)) };
  },
  presence: (c) => client.presence(c.channel),
  rpc: async (c) => ({ data: await client.rpc(c.method, c.data) }),
  history: (c) => client.history(c.channel, { last: c.last, fromSeq: c.fromSeq, limit: c.limit, reverse: c.reverse, beforeSeq: c.beforeSeq }),
  refreshToken: (c) => client.refreshToken(c.token),
  setToken: (c) => void (token = c.token),
  setSubToken: (c) => void subTokens.set(c.channel, c.token),
  // Closes the client and forgets the scenario; answered once nothing of it can write a line.
  async reset() {
    const old = client;
    generation++;
    client = undefined;
    token = undefined;
    subTokens.clear();
    subs.clear();
    await old?.close();
  },
  async close() {
    await client?.close();
    setImmediate(() => process.exit(0));
  },
};

function report(sub, m, emit) {
  // A binary payload (PROTOCOL.md "Binary payloads") is reported as its bytes in base64 and its type.
  const payload = m.data instanceof Uint8Array ? { bytes: Buffer.from(m.data).toString("base64"), type: m.type } : { data: m.data };
  emit({ event: "message", sub, channel: m.channel, seq: m.seq, ...payload, ...(m.redelivered ? { redelivered: true } : {}) });
}

/** A publish's payload: `bytes` (base64) as a Uint8Array, else `data`. */
function payloadOf(c) {
  return c.bytes !== undefined ? new Uint8Array(Buffer.from(c.bytes, "base64")) : c.data;
}

function without(o, key) {
  const { [key]: _, ...rest } = o;
  return rest;
}

createInterface({ input: process.stdin }).on("line", async (line) => {
  const c = JSON.parse(line);
  try {
    const fn = commands[c.cmd];
    if (!fn) throw Object.assign(new Error(`unknown command ${c.cmd}`), { code: "unknown_command", temporary: false });
    out({ id: c.id, ok: true, result: (await fn(c)) ?? {} });
  } catch (e) {
    out({ id: c.id, ok: false, error: errorOf(e) });
  }
});
