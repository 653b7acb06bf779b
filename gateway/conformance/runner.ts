// The conformance runner: plays one scenario (scenarios/*.json) against a client-under-test, a process that
// speaks the line protocol of README.md on stdin/stdout, and a `Harness` that owns the real gateway and its
// faults. It knows no SDK: any language's client passes by answering the same lines.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createInterface } from "node:readline";

/** A token the harness signs: rights on every channel unless `auto` adds server-side subscriptions. */
export type TokenSpec = { ttlSec?: number; auto?: string[] };

export type Step = Record<string, unknown> & ({ do: string } | { fault: string } | { expect: string });
export type Scenario = { name: string; description: string; steps: Step[] };

/** What the runner asks of the world around the client: the gateway, its faults, tokens. */
export interface Harness {
  /** The WebSocket URL the client connects to (through the harness' proxy, so that it can be cut). */
  readonly wsUrl: string;
  token(spec: TokenSpec): Promise<string>;
  /** Publishes over HTTP (not through the client under test); resolves with the stored seq. */
  publish(channel: string, data: unknown): Promise<number>;
  /** `cut`, `kill_workers`, `recreate_stream`, `refuse`, `accept`, `wait`. */
  fault(name: string, step: Step): Promise<void>;
}

export type ClientEvent = Record<string, unknown> & { event: string };
type Reply = { id: number; ok: boolean; result?: Record<string, unknown>; error?: { code: string; temporary: boolean; message?: string } };

/** A client-under-test process: commands in, replies and events out, one JSON object per line. */
export class ClientProcess {
  readonly events: ClientEvent[] = [];
  private readonly proc: ChildProcess;
  private readonly waiting = new Map<number, (r: Reply) => void>();
  private nextId = 1;
  private stderr = "";

  constructor(command: string, args: string[]) {
    this.proc = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"] });
    createInterface({ input: this.proc.stdout! }).on("line", (line) => {
      const o = JSON.parse(line) as Reply | ClientEvent;
      if ("event" in o) this.events.push(o);
      else this.waiting.get(o.id)?.(o);
    });
    this.proc.stderr!.on("data", (d: Buffer) => (this.stderr = (this.stderr + d.toString()).slice(-4_000)));
  }

  /** Sends a command and resolves with its reply. */
  send(cmd: Record<string, unknown>, timeoutMs = 20_000): Promise<Reply> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no reply to ${JSON.stringify(cmd)} in ${timeoutMs} ms; stderr: ${this.stderr}`)), timeoutMs);
      this.waiting.set(id, (r) => {
        clearTimeout(t);
        this.waiting.delete(id);
        resolve(r);
      });
      this.proc.stdin!.write(`${JSON.stringify({ ...cmd, id })}\n`);
    });
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null) return;
    const exited = new Promise((r) => this.proc.once("exit", r));
    await this.send({ cmd: "close" }, 5_000).catch(() => undefined);
    const t = setTimeout(() => this.proc.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(t);
  }
}

const EXPECT_TIMEOUT_MS = 20_000;

/** Plays `scenario`; throws with the transcript of the client's events when an expectation fails. */
export async function runScenario(scenario: Scenario, harness: Harness, client: ClientProcess): Promise<void> {
  const vars: Record<string, string> = { $ch: `conf.${scenario.name}.${randomUUID().slice(0, 8)}`, $durable: `conf-${randomUUID().slice(0, 8)}` };
  const bind = <T>(v: T): T => JSON.parse(JSON.stringify(v).replace(/\$(ch|durable)\b/g, (m) => vars[m]!)) as T;
  const replies = new Map<string, Reply>();
  let cursor = -1; // index of the event the last `expect: event` matched
  for (const [i, raw] of scenario.steps.entries()) {
    const step = bind(raw);
    const where = `${scenario.name} step ${i + 1} ${JSON.stringify(raw)}`;
    const fail = (why: string): never => {
      throw new Error(`${where}: ${why}\nclient events:\n${client.events.map((e) => JSON.stringify(e)).join("\n")}`);
    };
    if ("fault" in step) {
      if (step.fault === "publish") for (const n of step.n as number[]) await harness.publish(step.channel as string, { n });
      else await harness.fault(step.fault as string, step);
    } else if ("do" in step) {
      const reply = await client.send(await command(step, harness));
      if (typeof step.as === "string") replies.set(step.as, reply);
      else if (!reply.ok) fail(`the client answered ${JSON.stringify(reply.error)}`);
    } else if (step.expect === "event") {
      const at = await poll(() => {
        const j = client.events.findIndex((e, k) => k > cursor && e.event === step.type && matches(e, step.match));
        return j >= 0 ? j : undefined;
      });
      if (at === undefined) fail(`no ${String(step.type)} event matching ${JSON.stringify(step.match ?? {})}`);
      cursor = at!;
    } else if (step.expect === "no_event") {
      const found = client.events.find((e) => e.event === step.type && matches(e, step.match));
      if (found) fail(`unexpected ${JSON.stringify(found)}`);
    } else if (step.expect === "messages") {
      const want = step.n as number[];
      const got = () => client.events.filter((e) => e.event === "message" && e.sub === step.sub);
      await poll(() => (got().length >= want.length ? true : undefined));
      const msgs = got();
      const ns = msgs.map((m) => (m.data as { n?: unknown }).n);
      if (JSON.stringify(ns) !== JSON.stringify(want)) fail(`sub ${String(step.sub)} got n=${JSON.stringify(ns)}, want ${JSON.stringify(want)}`);
      if (Array.isArray(step.redelivered)) {
        const r = msgs.map((m) => m.redelivered === true);
        if (JSON.stringify(r) !== JSON.stringify(step.redelivered)) fail(`redelivered flags ${JSON.stringify(r)}, want ${JSON.stringify(step.redelivered)}`);
      }
      if (step.ordered !== false) {
        const seqs = msgs.map((m) => m.seq as number);
        if (seqs.some((s, k) => k > 0 && s <= seqs[k - 1]!)) fail(`seqs not strictly increasing: ${JSON.stringify(seqs)}`);
      }
    } else if (step.expect === "reply") {
      const r = replies.get(step.of as string) ?? fail(`no reply named ${String(step.of)}`);
      if (r.ok !== (step.ok ?? true)) fail(`reply ${JSON.stringify(r)}`);
      if (step.match && !matches({ ...r.result, ...r.error }, step.match)) fail(`reply ${JSON.stringify(r)} does not match ${JSON.stringify(step.match)}`);
      const same = typeof step.sameSeqAs === "string" ? replies.get(step.sameSeqAs) : undefined;
      if (same && same.result?.seq !== r.result?.seq) fail(`seq ${String(r.result?.seq)} is not ${String(same.result?.seq)} (${String(step.sameSeqAs)})`);
    } else if (step.expect === "backoff") {
      checkBackoff(client.events, step, fail);
    } else {
      fail("unknown step");
    }
  }
}

/** The line-protocol command of a `do` step (tokens signed by the harness). */
async function command(step: Step, harness: Harness): Promise<Record<string, unknown>> {
  const { do: cmd, as: _as, ...rest } = step as Step & { do: string };
  const out: Record<string, unknown> = { cmd, ...rest };
  if (cmd === "connect") {
    out.url = harness.wsUrl;
    if (step.token !== false) out.token = await harness.token((step.token as TokenSpec) ?? {});
  }
  if ((cmd === "refreshToken" || cmd === "setToken") && typeof step.token === "object") out.token = await harness.token(step.token as TokenSpec);
  if (cmd === "publish" && step.n !== undefined) out.data = { n: step.n };
  return out;
}

/**
 * Every reconnect delay the client reported (`disconnected.reconnectInMs`) lies in [0, min(max, min·2^k)],
 * where k is the `attempt` of the `connecting` event before it, and while failing the attempts count up.
 */
function checkBackoff(events: ClientEvent[], step: Step, fail: (why: string) => never): void {
  const min = step.minDelayMs as number;
  const max = step.maxDelayMs as number;
  let attempt: number | undefined;
  const seen: { attempt: number; delay: number }[] = [];
  for (const e of events) {
    if (e.event === "connecting") attempt = e.attempt as number;
    if (e.event === "disconnected" && e.willReconnect === true && attempt !== undefined) seen.push({ attempt, delay: e.reconnectInMs as number });
  }
  if (seen.length < (step.atLeast as number)) fail(`${seen.length} reconnects seen, want at least ${String(step.atLeast)}`);
  for (const { attempt: k, delay } of seen) {
    if (!(delay >= 0 && delay <= Math.min(max, min * 2 ** k))) fail(`delay ${delay} ms after attempt ${k} is outside [0, ${Math.min(max, min * 2 ** k)}]`);
  }
  const climbing = seen.slice(0, step.atLeast as number).map((s) => s.attempt);
  if (climbing.some((k, j) => j > 0 && k !== climbing[j - 1]! + 1)) fail(`attempts do not count up while failing: ${JSON.stringify(climbing)}`);
}

/** Partial deep match; `{lte: n}` / `{gte: n}` compare numbers. */
function matches(actual: unknown, want: unknown): boolean {
  if (want === undefined) return true;
  if (want && typeof want === "object" && !Array.isArray(want)) {
    const w = want as Record<string, unknown>;
    if ("lte" in w || "gte" in w)
      return typeof actual === "number" && (!("lte" in w) || actual <= (w.lte as number)) && (!("gte" in w) || actual >= (w.gte as number));
    if (!actual || typeof actual !== "object") return false;
    return Object.entries(w).every(([k, v]) => matches((actual as Record<string, unknown>)[k], v));
  }
  return JSON.stringify(actual) === JSON.stringify(want);
}

/** Polls `check` until it yields a value or EXPECT_TIMEOUT_MS pass. */
async function poll<T>(check: () => T | undefined): Promise<T | undefined> {
  const deadline = Date.now() + EXPECT_TIMEOUT_MS;
  for (;;) {
    const v = check();
    if (v !== undefined || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
}
