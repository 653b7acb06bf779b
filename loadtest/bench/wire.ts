// bench:wire — bytes on the wire per message over real sockets (issue 36): the realistic state channel (a
// ~2 KB JSON scoreboard in which a few fields change per message, gateway/conformance/fossil-vectors.ts)
// published --messages times through a real gateway and nats-server, received by four sockets at once:
// plain JSON, JSON with `delta: "fossil"`, plain MessagePack, MessagePack with deltas. Bytes are the
// WebSocket frames' (payload and the server's 2-10 byte header; TCP/IP not counted). Every delta socket's
// messages are applied (fossil-delta, as the SDK does; the SDK's sources are not part of this build) and
// checked against what was published.
// Then, unless --coalesce 0, the fanout bench's coalesce mode in a child process (its own nats-server and
// gateways: `bench -- fanout --coalesce MS --json`), whose JSON line gives cpuRatioCoalesced, cpuRatioPlain and
// latencyP99CoalescedMs; they join this bench's last JSON line. By default 1,000 sockets (in 3 client
// processes) on one channel, 500 msg/s paced evenly (`bench fanout --spacing even`), a 25 ms window: the issue's
// 2,000 sockets (--fanout-clients 2000 --fanout-procs 4) are at the edge of what a 2-core box delivers one frame
// per message, and about every other run a row falls behind (the fanout bench then says NOT VALID and this
// bench stops with that error).
// bytesRatioBinary: --messages binary payloads (seeded random bytes, 256 B to 2 KB) published over HTTP as
// application/octet-stream to a JSON socket (base64 with the type named) and a MessagePack socket (the bytes),
// both checked byte for byte against what was published; the ratio is MessagePack's bytes / JSON's.
// Usage: npm run bench -- wire [--messages 1000] [--coalesce 25] [--fanout-clients 1000] [--fanout-spacing even|burst] [--quick]
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { decode, encode } from "@msgpack/msgpack";
import WebSocket from "ws";
import { SPACINGS, type Spacing } from "./pace.js";
import { applyDelta } from "fossil-delta";
import { nextScoreboard, scoreboard } from "../../gateway/conformance/fossil-vectors.js";
import { httpPublish } from "#testkit/ws-client.js";
import { std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { commandLine, reportPath, writeReport } from "../kit/results.js";
import { startGatewayProc, startNats, until } from "./common.js";
import { rng } from "./rng.js";

const CHANNEL = "scores.m-0042";

/** A WebSocket frame's header from the server (unmasked): 2 bytes, 4 past 125, 10 past 65,535. */
const headerBytes = (n: number): number => (n < 126 ? 2 : n < 65_536 ? 4 : 10);

type Frame = Record<string, unknown> & { op: string };

/** One receiving socket: its frames' bytes, and each message's payload made whole (deltas applied to the last one). */
class Receiver {
  bytes = 0;
  msgs = 0;
  deltas = 0;
  subscribed = false;
  readonly docs: string[] = [];
  private base: Uint8Array = new Uint8Array();

  private constructor(
    readonly ws: WebSocket,
    readonly name: string,
    private readonly msgpack: boolean,
  ) {
    ws.on("message", (d: Buffer, isBinary: boolean) => {
      const f = frameOf(d, isBinary, msgpack);
      if (f.op === "ok") this.subscribed = true;
      if (f.op !== "msg") return;
      this.bytes += d.length + headerBytes(d.length);
      this.msgs++;
      if (f.delta === true) this.deltas++;
      if (f.delta === true) {
        const delta = msgpack
          ? (f.data as Uint8Array)
          : Buffer.from(f.enc === "base64" ? Buffer.from(f.data as string, "base64") : Buffer.from(f.data as string));
        this.base = applyDelta(this.base, delta);
      } else {
        // A full message's payload: the text spliced in after "data": (JSON), or the bytes of data (MessagePack).
        const text = d.toString();
        this.base = msgpack ? (f.data as Uint8Array).slice() : Buffer.from(text.slice(text.indexOf('"data":') + 7, -1));
      }
      this.docs.push(Buffer.from(this.base).toString("utf8"));
    });
  }

  static async open(url: string, name: string, msgpack: boolean, delta: boolean): Promise<Receiver> {
    const r = new Receiver(await connect(url, msgpack), name, msgpack);
    await subscribe(r.ws, msgpack, { op: "sub", id: 1, channel: CHANNEL, ...(delta ? { delta: "fossil" } : {}) }, () => r.subscribed, name);
    return r;
  }
}

/** A socket speaking fanout.v1.msgpack or fanout.v1, open. */
async function connect(url: string, msgpack: boolean): Promise<WebSocket> {
  const ws = new WebSocket(url, msgpack ? ["fanout.v1.msgpack"] : [], { perMessageDeflate: false });
  await new Promise<void>((res, rej) => {
    ws.once("open", () => res());
    ws.once("error", rej);
  });
  return ws;
}

/** Sends `sub` in the socket's wire and waits until `subscribed()` (its message handler saw the `ok`). */
async function subscribe(ws: WebSocket, msgpack: boolean, sub: Record<string, unknown>, subscribed: () => boolean, name: string): Promise<void> {
  ws.send(msgpack ? encode(sub) : JSON.stringify(sub));
  await until(subscribed, 10_000, `${name} subscribed`);
}

/** A server frame as the socket's wire carries it. */
const frameOf = (d: Buffer, isBinary: boolean, msgpack: boolean): Frame => (msgpack && isBinary ? decode(d) : JSON.parse(d.toString())) as Frame;

/** A socket on the binary channel: its `msg` frames' bytes and each payload as bytes (base64 decoded on JSON). */
async function binaryReceiver(url: string, channel: string, msgpack: boolean) {
  const ws = await connect(url, msgpack);
  const r = { ws, bytes: 0, subscribed: false, payloads: [] as Buffer[] };
  ws.on("message", (d: Buffer, isBinary: boolean) => {
    const f = frameOf(d, isBinary, msgpack);
    if (f.op === "ok") r.subscribed = true;
    if (f.op !== "msg") return;
    r.bytes += d.length + headerBytes(d.length);
    if (msgpack ? f.enc !== "binary" : f.enc !== "base64") throw new Error(`a binary payload came as enc ${String(f.enc)}`);
    r.payloads.push(msgpack ? Buffer.from(f.data as Uint8Array) : Buffer.from(f.data as string, "base64"));
  });
  await subscribe(ws, msgpack, { op: "sub", id: 1, channel }, () => r.subscribed, `${msgpack ? "MessagePack" : "JSON"} socket on ${channel}`);
  return r;
}

/** Binary payloads through the gateway at `base` to a JSON and a MessagePack socket: bytes per message of each. */
async function measureBinary(base: string, url: string, messages: number) {
  const channel = "blobs.b-0001";
  const json = await binaryReceiver(url, channel, false);
  const mp = await binaryReceiver(url, channel, true);
  const rnd = rng(3636);
  const published: Buffer[] = [];
  for (let i = 0; i < messages; i++) {
    const body = Buffer.alloc(256 + Math.floor(rnd() * 1_793));
    for (let j = 0; j < body.length; j++) body[j] = Math.floor(rnd() * 256);
    published.push(body);
    const r = await fetch(`${base}/v1/publish/${channel}`, { method: "POST", body, headers: { "content-type": "application/octet-stream" } });
    if (r.status !== 201) throw new Error(`octet-stream publish answered ${r.status}`);
  }
  await until(() => json.payloads.length >= messages && mp.payloads.length >= messages, 30_000, `${messages} binary messages on both sockets`);
  for (const [name, r] of [
    ["JSON", json],
    ["MessagePack", mp],
  ] as const)
    if (r.payloads.some((p, i) => !p.equals(published[i]!))) throw new Error(`${name}: the binary payloads differ from those published`);
  json.ws.close();
  mp.ws.close();
  const meanPayload = Math.round(published.reduce((n, p) => n + p.length, 0) / messages);
  return {
    binaryMeanPayloadBytes: meanPayload,
    binaryJsonBytesPerMsg: Math.round(json.bytes / messages),
    binaryMsgpackBytesPerMsg: Math.round(mp.bytes / messages),
    bytesRatioBinary: Number((mp.bytes / json.bytes).toFixed(4)),
  };
}

const BENCH = defineBench("wire", {
  messages: std("messages", { default: 1_000, quick: 100, help: "messages of the state channel" }),
  out: std("out", { help: "the report's file (default loadtest/results/wire.md)" }),
  "no-write": std("no-write"),
  quick: std("quick"),
  coalesce: { type: "number", min: 0, max: 1_000, default: 25, help: "ms: the window of the fanout bench's coalesce run (0: no such run)" },
  "fanout-clients": { type: "number", min: 1, integer: true, default: 1_000, quick: 50, help: "sockets of the coalesce run (the issue's: 2,000)" },
  "fanout-procs": { type: "number", min: 1, integer: true, default: 3, quick: 2, help: "client processes of the coalesce run" },
  "fanout-rate": { type: "number", min: 1, default: 500, quick: 100, help: "msg/s of the coalesce run" },
  "fanout-spacing": { type: "string", default: "even", choices: SPACINGS, help: "pacing of the coalesce run (bench fanout --spacing)" },
});

type CoalesceKeys = { cpuRatioCoalesced: number; cpuRatioPlain: number; latencyP99CoalescedMs: number };

/**
 * The fanout bench's coalesce mode as a child process (same build, same box, right after the delta run):
 * its output goes to stderr, its last JSON line's issue-36 keys are returned.
 */
async function coalesceKeys(ms: number, clients: number, procs: number, rate: number, spacing: Spacing, quick: boolean): Promise<CoalesceKeys> {
  const cli = fileURLToPath(new URL("../kit/cli.js", import.meta.url));
  const sizing = ["--clients", String(clients), "--procs", String(procs), "--rate", String(rate), "--spacing", spacing];
  const args = [cli, "fanout", "--coalesce", String(ms), ...sizing, "--json"];
  const child = spawn(process.execPath, quick ? [...args, "--quick"] : args, { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    process.stderr.write(d);
  });
  const code = await new Promise<number | null>((res) => child.on("close", res));
  if (code !== 0) throw new Error(`bench fanout --coalesce exited ${code}`);
  const last = out.trim().split("\n").at(-1) ?? "";
  const r = JSON.parse(last) as Partial<CoalesceKeys> & { behind?: string[] };
  if (r.behind && r.behind.length > 0)
    throw new Error(
      `bench fanout --coalesce: ${r.behind.join("; ")} could not keep up with ${clients} sockets × ${rate} msg/s on this machine; try fewer --fanout-clients`,
    );
  if (typeof r.cpuRatioCoalesced !== "number" || typeof r.cpuRatioPlain !== "number" || typeof r.latencyP99CoalescedMs !== "number")
    throw new Error(`bench fanout --coalesce printed no issue-36 keys: ${last}`);
  const round = (n: number, d: number) => Number(n.toFixed(d));
  return {
    cpuRatioCoalesced: round(r.cpuRatioCoalesced, 3),
    cpuRatioPlain: round(r.cpuRatioPlain, 3),
    latencyP99CoalescedMs: round(r.latencyP99CoalescedMs, 2),
  };
}

runBench(BENCH, async ({ flags: a, argv }) => {
  const { result, rows } = await measureDeltas(a.messages);
  const coalesce =
    a.coalesce > 0
      ? await coalesceKeys(a.coalesce, a["fanout-clients"], a["fanout-procs"], a["fanout-rate"], a["fanout-spacing"] as Spacing, a.quick)
      : undefined;
  const table = [
    `| socket (${result.messages} messages, mean payload ${result.meanPayloadBytes} B) | bytes per message | delta frames |`,
    `|---|---|---|`,
    ...rows,
    `| **bytesRatioDelta** (JSON with deltas / plain JSON; target ≤ 0.2) | ${result.bytesRatioDelta} | |`,
    `| MessagePack with deltas / plain MessagePack | ${result.bytesRatioDeltaMsgpack} | |`,
    `| binary payloads (mean ${result.binaryMeanPayloadBytes} B): JSON, base64 / MessagePack, bytes | ${result.binaryJsonBytesPerMsg} / ${result.binaryMsgpackBytesPerMsg} | |`,
    `| **bytesRatioBinary** (MessagePack with bytes / JSON with base64; target ≤ 0.8) | ${result.bytesRatioBinary} | |`,
  ];
  if (coalesce)
    table.push(
      `| **cpuRatioCoalesced** (fanout, ${a["fanout-clients"]} sockets × ${a["fanout-rate"]} msg/s, ${a["fanout-spacing"]} spacing, ${a.coalesce} ms window: CPU per delivery / bare uWS; target ≤ 0.5) | ${coalesce.cpuRatioCoalesced} | |`,
      `| **cpuRatioPlain** (the same, window off; about 1.1) | ${coalesce.cpuRatioPlain} | |`,
      `| **latencyP99CoalescedMs** (target ≤ window + 15) | ${coalesce.latencyP99CoalescedMs} | |`,
    );
  const all = { ...result, ...coalesce };
  console.log(table.join("\n"));
  const path = reportPath(a, "wire.md");
  if (path)
    writeReport(
      path,
      `# bench:wire\n\n\`${commandLine("wire", argv)}\` — ${new Date().toISOString()}, Node ${process.version}, one gateway worker, real sockets.\n\n${table.join("\n")}\n\n\`\`\`json\n${JSON.stringify(all)}\n\`\`\`\n`,
    );
  console.log(JSON.stringify(all));
});

/** The state channel through one gateway to the four sockets: bytes per message of each, and the ratios. */
async function measureDeltas(messages: number) {
  const nats = await startNats();
  const gw = await startGatewayProc(nats.url, 1);
  const base = `http://127.0.0.1:${gw.port}`;
  const url = `ws://127.0.0.1:${gw.port}/ws`;
  try {
    const rx = [
      await Receiver.open(url, "JSON", false, false),
      await Receiver.open(url, "JSON, delta", false, true),
      await Receiver.open(url, "MessagePack", true, false),
      await Receiver.open(url, "MessagePack, delta", true, true),
    ];
    const rnd = rng(36);
    let doc = scoreboard();
    const published: string[] = [];
    let payload = 0;
    for (let i = 0; i < messages; i++) {
      doc = nextScoreboard(doc, rnd);
      const text = JSON.stringify(doc);
      published.push(text);
      payload += Buffer.byteLength(text);
      const r = await httpPublish(base, CHANNEL, doc);
      if (r.status !== 201) throw new Error(`publish answered ${r.status}`);
    }
    await until(() => rx.every((r) => r.msgs >= messages), 30_000, `${messages} messages on every socket`);
    for (const r of rx) if (r.docs.join("\n") !== published.join("\n")) throw new Error(`${r.name}: the documents differ from those published`);
    const [json, jsonDelta, mp, mpDelta] = rx as [Receiver, Receiver, Receiver, Receiver];
    const per = (r: Receiver) => Math.round(r.bytes / messages);
    const result = {
      messages,
      meanPayloadBytes: Math.round(payload / messages),
      jsonBytesPerMsg: per(json),
      jsonDeltaBytesPerMsg: per(jsonDelta),
      msgpackBytesPerMsg: per(mp),
      msgpackDeltaBytesPerMsg: per(mpDelta),
      deltaFrames: jsonDelta.deltas,
      bytesRatioDelta: Number((jsonDelta.bytes / json.bytes).toFixed(4)),
      bytesRatioDeltaMsgpack: Number((mpDelta.bytes / mp.bytes).toFixed(4)),
    };
    for (const r of rx) r.ws.close();
    const binary = await measureBinary(base, url, messages);
    return { result: { ...result, ...binary }, rows: rx.map((r) => `| ${r.name} | ${per(r)} | ${r.deltas} |`) };
  } finally {
    gw.proc.kill("SIGTERM");
    await nats.stop();
  }
}
