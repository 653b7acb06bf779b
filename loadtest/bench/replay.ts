// bench:replay — replay rate to one socket (msgs/s) against the raw ordered-consumer read rate of the same
// stream in the same run. Target: the socket gets at least 90% of the raw rate.
// Usage: npm run bench -- replay [--messages 100000] [--size 100] [--rounds 9] [--warmup 1]
//        [--layout shared|pinned] [--engine lean|ws] [--secure]
// --secure: nats-server with TLS (client certificates verified) and a user/password; the gateway, the filler
// and the raw reader connect with them (BENCH_GATEWAY_ARGS="--replay-connection shared" compares the link).
// The measuring client is the load tools' lean engine by default (`ws` costs it about twice the CPU per
// frame, which on two shared cores is taken from the gateway under test).
// Layout "shared" (default) leaves placement to the scheduler: two busy processes on the machine's cores in
// the raw leg, three in the socket leg. "pinned" (2+ CPUs) gives the reader under test a core of its own —
// the raw consumer in the raw leg, the gateway in the socket leg — and nats-server shares the other core
// with the measuring client; on two cores that starves nats-server in the socket leg, so it reads lower.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { NodeConnectionOptions } from "@nats-io/transport-node";
import { childPids, fmt, pinToCpu, startGatewayProc, startNats } from "./common.js";
import { startNatsServer } from "#testkit/nats-server.js";
import { makeTestPki, secureServerConfig } from "#testkit/nats-secure.js";
import { fillStream, rawRead, socketReplay } from "./replay-legs.js";
import { std } from "../kit/flags.js";
import { defineBench, runBench } from "../kit/main.js";
import { alternate, median, runRounds } from "../kit/rounds.js";

const BENCH = defineBench("replay", {
  messages: std("messages", { default: 100_000, quick: 10_000 }),
  size: std("size", { default: 100 }),
  rounds: std("rounds", { default: 9, quick: 2 }),
  warmup: std("warmup", { default: 1 }),
  layout: {
    type: "string",
    default: "shared",
    choices: ["shared", "pinned"],
    help: "shared: the scheduler places the processes; pinned: the reader under test gets a core",
  },
  engine: { type: "string", default: "lean", choices: ["lean", "ws"], help: "the measuring client's engine" },
  secure: { type: "boolean", help: "nats-server with TLS (client certificates verified) and a password" },
  quick: std("quick"),
});

runBench(BENCH, async ({ flags: v }) => {
  const { messages: count, size, rounds, warmup, engine } = v;
  let natsOpts: NodeConnectionOptions = {};
  let gwEnv: Record<string, string> | undefined;
  let nats: { url: string; proc: ChildProcess };
  const temps: string[] = [];
  if (v.secure) {
    const pki = makeTestPki();
    const secrets = mkdtempSync(join(tmpdir(), "fgw-bench-"));
    temps.push(pki.dir, secrets);
    const pw = join(secrets, "pw");
    writeFileSync(pw, "bench-pw");
    const h = await startNatsServer({ config: secureServerConfig(pki, [{ who: { user: "bench", password: "bench-pw" } }], { verify: true }) });
    nats = { url: h.url, proc: h.process };
    natsOpts = {
      user: "bench",
      pass: "bench-pw",
      tls: { ca: readFileSync(pki.ca, "utf8"), cert: readFileSync(pki.clientCert, "utf8"), key: readFileSync(pki.clientKey, "utf8") },
    };
    gwEnv = { NATS_USER: "bench", NATS_PASSWORD_FILE: pw, NATS_TLS_CA_FILE: pki.ca, NATS_TLS_CERT_FILE: pki.clientCert, NATS_TLS_KEY_FILE: pki.clientKey };
  } else {
    nats = await startNats();
  }
  // The worker keeps pages of stored messages for sockets catching up the same pattern; a 1 MiB cache makes
  // every round read the stream again (a larger one would serve later rounds from memory, several times
  // faster than the raw read, which is what a reconnect storm gets but not what this measures).
  const gw = await startGatewayProc(
    nats.url,
    1,
    ["--replay-cache-bytes", "1MiB", ...(process.env.BENCH_GATEWAY_ARGS ?? "").split(" ").filter(Boolean)],
    undefined,
    gwEnv,
  );
  await fillStream(nats.url, "ev.bench.replay", count, size, natsOpts);
  // Raw reader and gateway on CPU 1; nats-server and the measuring socket client on CPU 0.
  const pinned =
    v.layout === "pinned" &&
    [nats.proc.pid!, process.pid].every((p) => pinToCpu(p, 0)) &&
    [gw.proc.pid!, ...childPids(gw.proc.pid!)].every((p) => pinToCpu(p, 1));
  if (v.layout === "pinned" && !pinned) console.log("(could not pin processes to CPUs: running with the shared layout)");
  const raw = async () => {
    if (pinned) pinToCpu(process.pid, 1);
    const rate = await rawRead(nats.url, "ev.bench.replay", count, natsOpts);
    if (pinned) pinToCpu(process.pid, 0);
    return rate;
  };
  const sock = () => socketReplay(gw.port, "bench.replay", count, engine);
  // The legs alternate which goes first, so a slow drift of the machine's speed favours neither; warm-up
  // rounds (JIT, heap growth on both sides) are run and not counted.
  const measured = await runRounds({ rounds, warmup }, async (r) => {
    const got: Partial<Record<"raw" | "sock", number>> = {};
    for (const leg of alternate(["raw", "sock"] as const, r)) got[leg] = await (leg === "raw" ? raw() : sock());
    return { raw: got.raw!, sock: got.sock! };
  });
  const raws = measured.map((m) => m.raw);
  const socks = measured.map((m) => m.sock);
  // Each round measures both back to back, so a round's ratio shares that moment's machine noise.
  const ratios = raws.map((r, i) => socks[i]! / r);
  console.log(
    `\nbench:replay — ${fmt(count)} stored messages of ~${size} B, ${rounds} rounds after ${warmup} warm-up (both legs each round, alternating which goes first), layout ${pinned ? "pinned" : "shared"}, client engine ${engine}${v.secure ? ", NATS with TLS and a password" : ""}`,
  );
  console.log("| round | raw ordered consumer msgs/s | replay to one socket msgs/s | ratio |\n|---|---:|---:|---:|");
  raws.forEach((r, i) => console.log(`| ${i + 1} | ${fmt(r)} | ${fmt(socks[i]!)} | ${ratios[i]!.toFixed(3)} |`));
  console.log(`median raw ${fmt(median(raws))} msgs/s, median socket ${fmt(median(socks))} msgs/s`);
  console.log(
    `ratio socket/raw: median of rounds ${median(ratios).toFixed(3)} (min ${Math.min(...ratios).toFixed(3)}, max ${Math.max(...ratios).toFixed(3)}); target >= 0.90`,
  );
  gw.proc.kill("SIGTERM");
  nats.proc.kill("SIGTERM");
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});
