// bench:deltas — what per-channel Fossil deltas (issue 36) save on the wire and cost in CPU, in process: the
// realistic state channel of the issue (a ~2 KB JSON scoreboard in which a few fields change per message,
// gateway/conformance/fossil-vectors.ts) sent --messages times to one `delta: "fossil"` subscriber.
//   bytes: the `msg` frames as the server builds them today (protocol/serialize.ts) against the same messages
//          with deltas, in the framing of PROTOCOL.md "Deltas" (protocol/serialize.ts) (the first message full, then
//          `"delta":true,"base":B` frames whose data is the delta as a JSON string, or base64 when it is not
//          UTF-8); the same with the delta always in base64, for comparison.
//   CPU:   the server's side (fanout/deltas.ts: the worker's base copy and the delta, made once per message)
//          and the TypeScript SDK's: fossil-delta's applyDelta, which client/src/deltas.ts calls (the SDK adds a
//          Map read and write; its sources are not part of this build), then UTF-8 decode and JSON.parse.
// Usage: npm run bench -- deltas [--messages 1000] [--rounds 5] [--warmup 2] [--quick]
import { nextScoreboard, scoreboard } from "../../gateway/conformance/fossil-vectors.js";
import { applyDelta } from "fossil-delta";
import { ChannelDeltas, DeltaSubscription, type DeltaMessage } from "../../gateway/src/fanout/deltas.js";
import { deltaFrame, msgFrame } from "../../gateway/src/protocol/serialize.js";
import { std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { commandLine, reportPath, writeReport } from "../kit/results.js";
import { median } from "../kit/rounds.js";
import { rng } from "./rng.js";

const CHANNEL = "scores.m-0042";
const TS = 1_764_100_000_123.456;

/** The server's delta frame; with `base64`, as if its data were always `"enc":"base64"` (for comparison). */
function deltaFrameBytes(m: DeltaMessage, base64: boolean): number {
  const d = m.delta()!;
  const frame = deltaFrame({ channel: m.channel, pattern: m.channel, seq: m.seq, ts: TS }, m.baseSeq, d).length;
  if (!base64) return frame;
  const asString = Buffer.byteLength(JSON.stringify(Buffer.from(d).toString("utf8")));
  return frame - asString + '"enc":"base64",'.length + Buffer.from(d).toString("base64").length + 2;
}

function payloads(n: number): Uint8Array[] {
  const rnd = rng(36);
  let doc = scoreboard();
  return Array.from({ length: n }, () => {
    doc = nextScoreboard(doc, rnd);
    return new TextEncoder().encode(JSON.stringify(doc));
  });
}

const cpuUs = (f: () => void): number => {
  const t0 = process.cpuUsage();
  f();
  const t = process.cpuUsage(t0);
  return t.user + t.system;
};

type Round = { createUs: number; applyUs: number; applyParseUs: number };

/** One round: the server makes each message's delta once, the SDK applies it; CPU µs per message. */
function round(msgs: readonly Uint8Array[]): Round {
  const deltas = new ChannelDeltas();
  const made: DeltaMessage[] = [];
  const createUs = cpuUs(() => {
    msgs.forEach((p, i) => {
      const m = deltas.next(CHANNEL, i + 1, p);
      m.delta();
      made.push(m);
    });
  });
  const decoder = new TextDecoder("utf-8", { fatal: true });
  const apply = (parse: boolean): number => {
    let base = msgs[0]!;
    const us = cpuUs(() => {
      for (const m of made.slice(1)) {
        base = applyDelta(base, m.delta()!);
        if (parse) JSON.parse(decoder.decode(base));
      }
    });
    if (!Buffer.from(base).equals(Buffer.from(msgs.at(-1)!))) throw new Error("the deltas did not rebuild the last message");
    return us;
  };
  const applyUs = apply(false);
  const applyParseUs = apply(true);
  const n = msgs.length;
  return { createUs: createUs / n, applyUs: applyUs / (n - 1), applyParseUs: applyParseUs / (n - 1) };
}

/** Wire bytes of the whole run: plain frames, and with deltas (text carriage or always base64). */
function wireBytes(msgs: readonly Uint8Array[]): { plain: number; delta: number; delta64: number; fulls: number; payload: number } {
  const deltas = new ChannelDeltas();
  const sub = new DeltaSubscription();
  let [plain, delta, delta64, fulls, payload] = [0, 0, 0, 0, 0];
  msgs.forEach((p, i) => {
    const full = msgFrame({ channel: CHANNEL, pattern: CHANNEL, seq: i + 1, ts: TS }, p).length;
    plain += full;
    payload += p.length;
    const m = deltas.next(CHANNEL, i + 1, p);
    if (sub.next(m) === "full") {
      fulls++;
      delta += full;
      delta64 += full;
    } else {
      delta += deltaFrameBytes(m, false);
      delta64 += deltaFrameBytes(m, true);
    }
  });
  return { plain, delta, delta64, fulls, payload };
}

const BENCH = defineBench("deltas", {
  messages: std("messages", { default: 1_000, quick: 100, help: "messages of the state channel" }),
  rounds: std("rounds", { default: 5, quick: 1 }),
  warmup: std("warmup", { default: 2, quick: 0 }),
  json: std("json"),
  out: std("out", { help: "the report's file (default loadtest/results/deltas.md)" }),
  "no-write": std("no-write"),
  quick: std("quick"),
});

runBench(BENCH, async ({ flags: a, argv }) => {
  const msgs = payloads(a.messages);
  const w = wireBytes(msgs);
  for (let i = 0; i < a.warmup; i++) round(msgs);
  const rounds = Array.from({ length: a.rounds }, () => round(msgs));
  const med = (k: keyof Round): number => median(rounds.map((r) => r[k]));
  const result = {
    messages: a.messages,
    meanPayloadBytes: Math.round(w.payload / a.messages),
    plainBytesPerMsg: Math.round(w.plain / a.messages),
    deltaBytesPerMsg: Math.round(w.delta / a.messages),
    bytesRatioDelta: Number((w.delta / w.plain).toFixed(4)),
    bytesRatioDeltaBase64: Number((w.delta64 / w.plain).toFixed(4)),
    fullMessages: w.fulls,
    createUsPerMsg: Number(med("createUs").toFixed(2)),
    applyUsPerMsg: Number(med("applyUs").toFixed(2)),
    applyParseUsPerMsg: Number(med("applyParseUs").toFixed(2)),
    rounds: a.rounds,
  };
  const table = [
    `| measure | value |`,
    `|---|---|`,
    `| messages (mean payload) | ${result.messages} (${result.meanPayloadBytes} B) |`,
    `| plain JSON frame, mean | ${result.plainBytesPerMsg} B |`,
    `| with deltas, mean (${result.fullMessages} full) | ${result.deltaBytesPerMsg} B |`,
    `| bytesRatioDelta (delta as a JSON string; base64 when not UTF-8) | ${result.bytesRatioDelta} (target ≤ 0.2) |`,
    `| the same, delta always base64 | ${result.bytesRatioDeltaBase64} |`,
    `| server: base copy + delta, CPU per message (median of ${a.rounds}) | ${result.createUsPerMsg} µs |`,
    `| SDK: apply, CPU per message | ${result.applyUsPerMsg} µs |`,
    `| SDK: apply + UTF-8 decode + JSON.parse, CPU per message | ${result.applyParseUsPerMsg} µs |`,
  ].join("\n");
  console.log(table);
  const path = reportPath(a, "deltas.md");
  if (path)
    writeReport(
      path,
      `# bench:deltas\n\n\`${commandLine("deltas", argv)}\` — ${new Date().toISOString()}, Node ${process.version}, in process (no sockets).\n\n${table}\n\n\`\`\`json\n${JSON.stringify(result)}\n\`\`\`\n`,
    );
  console.log(JSON.stringify(result));
});
