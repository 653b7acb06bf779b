// Encryption at rest: the users' open question (seed 000: "we have observed as little as 1% decrease to more than
// 30%", asked whether going without is a deal-breaker). The same work on a single nats-server with a plain file
// store and with JetStream's own encryption (cipher chachapoly, then aes): nats bench sync and async publishes, and
// a replay through the gateway from a store read cold (the server restarted after the publishes, so each block is
// read and, when encrypted, decrypted again). Each encrypted row is reported as a ratio to the plain row of the
// same round.
import WebSocket from "ws";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGatewayProc } from "../common.js";
import { parseBench, runNats, startNats } from "./natscli.js";
import { errText } from "./context.js";
import { ASYNC_BATCH } from "./matrix.js";
import { cpuWindow } from "./cpu.js";
import { latencyFromBench, ratesFromBench, type Row } from "./rows.js";
import type { Options } from "./options.js";
import { spreadOf, type Rep } from "./report.js";

export const CIPHERS = ["plain", "chachapoly", "aes"] as const;
export type Cipher = (typeof CIPHERS)[number];
export const ENC_KINDS = ["pub-sync", "pub-async", "replay"] as const;
type Kind = (typeof ENC_KINDS)[number];

const SIZE = 1024;
const STREAM = "ENC";
const GW_STREAM = "ENCGW";
const GW_PREFIX = "encgw";
const CHANNEL = "bench.replay";

export type EncContext = { opts: Options; log(line: string): void; add(row: Row): void };

const serverConfig = (c: Cipher): string | undefined =>
  c === "plain" ? undefined : `jetstream { cipher: ${c}, key: "bench-only-key-${c}-0123456789abcdef" }\n`;

function row(kind: Kind, cipher: Cipher, config: string, commands: string[], parts: Partial<Row>): Row {
  return {
    workload: `enc.${kind}.${cipher}`,
    seed: "enc",
    target: "single",
    path: kind === "replay" ? "gateway WS" : "nats bench",
    config,
    commands,
    metric: kind === "replay" ? "replayed msgs/s (one socket, from:all, cold store)" : "published msgs/s",
    status: "ok",
    lines: [],
    round: 0,
    ...parts,
  };
}

async function publish(s: NatsServerHandle, kind: "pub-sync" | "pub-async", cipher: Cipher, msgs: number, timeoutMs: number): Promise<Row> {
  const mode = kind === "pub-sync" ? "sync" : "async";
  const args = [
    "bench",
    "js",
    "pub",
    mode,
    "enc.bench",
    "--stream",
    STREAM,
    "--clients",
    "1",
    "--msgs",
    String(msgs),
    "--size",
    String(SIZE),
    "--no-progress",
    ...(mode === "async" ? ["--batch", String(ASYNC_BATCH)] : []),
  ];
  const config = `1 publisher, ${msgs.toLocaleString("en-US")} msgs of 1 KB, ${mode}${mode === "async" ? ` (batches of ${ASYNC_BATCH})` : ""}, R1 file store, ${cipher === "plain" ? "not encrypted" : `encrypted with ${cipher}`}`;
  const commands = [`nats ${args.join(" ")}`];
  const srv = cpuWindow([s.process.pid!]);
  try {
    const o = await startNats(args, s.url, timeoutMs).done;
    if (o.code !== 0) throw new Error(o.timedOut ? `timed out after ${timeoutMs} ms` : `exited ${o.code}: ${o.stderr.trim().slice(-300)}`);
    const b = parseBench(o.stdout);
    const pub = ratesFromBench([b]);
    return row(kind, cipher, config, commands, {
      pub,
      value: pub.aggregate,
      serverCpuPct: srv.read(),
      lines: b.lines,
      ...(b.latencyUs && mode === "sync" ? { latency: latencyFromBench(b.latencyUs) } : {}),
    });
  } catch (e) {
    return row(kind, cipher, config, commands, { status: "failed", note: errText(e) });
  }
}

/** One socket subscribes from:"all" and counts message frames until `msgs` arrived; resolves with msgs/s. */
function replayRate(port: number, msgs: number, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    let got = 0;
    let t0 = 0;
    const timer = setTimeout(() => {
      ws.terminate();
      reject(new Error(`replay: ${got} of ${msgs} messages within ${timeoutMs} ms`));
    }, timeoutMs);
    ws.on("open", () => {
      t0 = performance.now();
      ws.send(JSON.stringify({ op: "sub", id: "r", channel: CHANNEL, from: "all" }));
    });
    ws.on("message", (d: Buffer) => {
      if (d.subarray(0, 16).toString().startsWith('{"op":"msg"')) got++;
      else if (d.subarray(0, 12).toString().startsWith('{"op":"err"')) {
        clearTimeout(timer);
        ws.terminate();
        reject(new Error(`replay: ${d.toString().slice(0, 200)}`));
        return;
      }
      if (got === msgs) {
        const ms = performance.now() - t0;
        clearTimeout(timer);
        ws.close();
        resolve((msgs / ms) * 1000);
      }
    });
    ws.on("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

async function replay(s: NatsServerHandle, cipher: Cipher, msgs: number, timeoutMs: number): Promise<Row> {
  const gwArgs = ["--stream-name", GW_STREAM, "--subject-prefix", GW_PREFIX, "--replay-cache-bytes", "1MiB"];
  const pubArgs = [
    "bench",
    "js",
    "pub",
    "async",
    `${GW_PREFIX}.${CHANNEL}`,
    "--stream",
    GW_STREAM,
    "--clients",
    "1",
    "--msgs",
    String(msgs),
    "--size",
    String(SIZE),
    "--no-progress",
    "--batch",
    String(ASYNC_BATCH),
  ];
  const config = `${msgs.toLocaleString("en-US")} msgs of 1 KB in the gateway's stream (R1 file, ${cipher === "plain" ? "not encrypted" : cipher}); nats-server restarted before the replay; the gateway (1 worker) replays them to one WebSocket`;
  const commands = [
    `fanout-gateway --workers 1 ${gwArgs.join(" ")}`,
    `nats ${pubArgs.join(" ")}`,
    "(nats-server restarted, gateway started again)",
    `{"op":"sub","channel":"${CHANNEL}","from":"all"} until ${msgs} msg frames`,
  ];
  let gw = await startGatewayProc(s.url, 1, gwArgs);
  const stopGw = async () => {
    if (gw.proc.exitCode !== null || gw.proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => gw.proc.once("exit", () => r()));
    gw.proc.kill("SIGTERM");
    await exited;
  };
  try {
    const o = await startNats(pubArgs, s.url, timeoutMs).done;
    if (o.code !== 0) throw new Error(`publish: exited ${o.code}: ${o.stderr.trim().slice(-300)}`);
    await stopGw();
    // SIGTERM (a clean stop that writes everything) and the same store again; the handle's stop() would remove it.
    const p = s.process;
    const exited = new Promise<void>((r) => p.once("exit", () => r()));
    p.kill("SIGTERM");
    await exited;
    await s.restart();
    gw = await startGatewayProc(s.url, 1, gwArgs);
    const srv = cpuWindow([s.process.pid!]);
    const rate = await replayRate(gw.port, msgs, timeoutMs);
    return row("replay", cipher, config, commands, {
      value: rate,
      serverCpuPct: srv.read(),
      lines: [`replay through the gateway: ${Math.round(rate).toLocaleString("en-US")} msgs/sec (${msgs} msgs, one socket)`],
    });
  } catch (e) {
    return row("replay", cipher, config, commands, { status: "failed", note: errText(e) });
  } finally {
    await stopGw();
  }
}

/**
 * Plain, chachapoly and aes in turn, each on a fresh single nats-server; the order rotates with the round, so
 * that whatever the box does early or late in a round does not always land on the same cipher.
 */
export async function runEncryption(ctx: EncContext, round: number): Promise<void> {
  const c = ctx.opts.counts;
  const timeoutMs = ctx.opts.quick ? 60_000 : 300_000;
  const order = CIPHERS.map((_, i) => CIPHERS[(i + round - 1) % CIPHERS.length]!);
  for (const cipher of order) {
    ctx.log(`[enc] ${cipher}: single nats-server, ${cipher === "plain" ? "plain file store" : `jetstream { cipher: ${cipher}, key: … }`}`);
    const config = serverConfig(cipher);
    const s = await startNatsServer(config ? { config } : {});
    try {
      await runNats(["stream", "add", STREAM, "--subjects", "enc.>", "--storage", "file", "--replicas", "1", "--defaults"], s.url);
      // A warm-up the figures leave out: the server's first publishes (connections, first block) cost more.
      await runNats(["bench", "js", "pub", "sync", "enc.warm", "--stream", STREAM, "--msgs", "100", "--size", String(SIZE), "--no-progress"], s.url, timeoutMs);
      ctx.add(await publish(s, "pub-sync", cipher, c.encSync, timeoutMs));
      ctx.add(await publish(s, "pub-async", cipher, c.encAsync, timeoutMs));
      ctx.add(await replay(s, cipher, c.encReplay, timeoutMs));
    } finally {
      await s.stop();
    }
  }
}

const f0 = (n: number | undefined): string => (n === undefined ? "–" : Math.round(n).toLocaleString("en-US"));
const fr = (n: number): string => n.toFixed(2);

/** Encrypted / plain per round, for one kind and cipher. */
export function encRatios(rows: readonly Row[], kind: Kind, cipher: Cipher): number[] {
  const rounds = [...new Set(rows.map((r) => r.round))];
  return rounds.flatMap((round) => {
    const at = (c: Cipher) => rows.find((r) => r.round === round && r.workload === `enc.${kind}.${c}` && r.status === "ok")?.value;
    const x = at(cipher);
    const y = at("plain");
    return x !== undefined && y !== undefined && y > 0 ? [x / y] : [];
  });
}

export function encryptionSection(rows: readonly Row[], reps: readonly Rep[]): string[] {
  const label: Record<Kind, string> = {
    "pub-sync": "publish, sync (each awaits its ack)",
    "pub-async": `publish, async (batches of ${ASYNC_BATCH})`,
    replay: "replay through the gateway (cold store)",
  };
  const out = [
    "## Encryption at rest: encrypted / plain file store",
    "",
    'The users asked what encrypting file-based streams costs (the passage their notes quote: "as little as 1% decrease to more than 30%"; they measured nothing) and whether going without it is a deal-breaker (seed 000). Here: one single nats-server per cipher (`jetstream { cipher, key }`), 1 KB messages, R1 file streams; the replay row restarts nats-server after the publishes so the blocks are read (and decrypted) again. Ratios are encrypted / plain msgs/s of the same round (below 1: slower); medians over the rounds, with the range.',
    "",
    "| workload | plain msgs/s | chachapoly msgs/s | aes msgs/s | chachapoly / plain | aes / plain | nats-server CPU plain / chachapoly / aes, % of a core |",
    "|---|---:|---:|---:|---:|---:|---:|",
  ];
  for (const kind of ENC_KINDS) {
    const rep = (c: Cipher) => reps.find((r) => r.workload === `enc.${kind}.${c}`);
    const ratio = (c: Cipher) => {
      const s = spreadOf(encRatios(rows, kind, c));
      return s ? `${fr(s.med)}${s.n > 1 ? ` (${fr(s.min)}–${fr(s.max)}, n=${s.n})` : ""}` : "–";
    };
    const cell = (c: Cipher) => {
      const r = rep(c);
      return r?.status === "ok" ? f0(r.value) : r ? `FAILED: ${r.note ?? ""}` : "–";
    };
    const cpu = CIPHERS.map((c) => f0(rep(c)?.serverCpuPct)).join(" / ");
    out.push(`| ${label[kind]} | ${cell("plain")} | ${cell("chachapoly")} | ${cell("aes")} | ${ratio("chachapoly")} | ${ratio("aes")} | ${cpu} |`);
  }
  return out;
}
