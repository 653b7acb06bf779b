// The conformance runner: plays one scenario (scenarios/*.json) against clients-under-test, processes that
// speak the line protocol of README.md on stdin/stdout, and a `Harness` that owns the real gateway and its
// faults. It knows no SDK: any language's client passes by answering the same lines.
import { randomUUID } from "node:crypto";
import { ClientPool, type ClientCommand, type ClientEvent, type ClientProcess, type Reply } from "./clients.js";
import { bytesOfHex, payloadFields, payloadMismatch, type ExpectedPayload } from "./payloads.js";

export { ClientPool, ClientProcess, type ClientCommand, type ClientEvent } from "./clients.js";

/**
 * A token the harness signs: rights to subscribe everywhere, to publish on `pub` (default everywhere), to call
 * the RPC methods `rpc` (default none), subject `user`.
 */
export type TokenSpec = { ttlSec?: number; auto?: string[]; user?: string; sub?: string[]; pub?: string[]; rpc?: string[] };

/** A subscription token the harness signs (PROTOCOL.md "Subscription tokens"): `channel`, expiring in `ttlSec` (default 10 min), subject `user`. */
export type SubTokenSpec = { channel: string; ttlSec?: number; user?: string };

export type Step = Record<string, unknown> & ({ do: string } | { fault: string } | { expect: string });
export type Scenario = { name: string; description: string; steps: Step[] };

/** What the runner asks of the world around the client: the gateway, its faults, tokens. */
export interface Harness {
  /** The WebSocket URL the client connects to (through the harness' proxy, so that it can be cut). */
  readonly wsUrl: string;
  token(spec: TokenSpec): Promise<string>;
  /** A subscription token (a `setSubToken` step; harnesses without one cannot play the scenarios that use it). */
  subToken?(spec: SubTokenSpec): Promise<string>;
  /**
   * Publishes over HTTP (not through the client under test); resolves with the stored seq. Bytes (a
   * Uint8Array) go as `Content-Type: application/octet-stream`, anything else as JSON.
   */
  publish(channel: string, data: unknown): Promise<number>;
  /** `cut`, `stall`, `refuse`, `accept`, `down`, `up`, `kill_workers`, `recreate_stream`, `wait`. */
  fault(name: string, step: Step): Promise<void>;
  /** Delta frames the gateway sent so far (`fanout_delta_frames_total{kind="delta"}`), for `expect: deltas`. */
  deltasSent?(): Promise<number>;
}

/**
 * The document of a `publish` with `"doc": true`: about 2 KB of JSON in which only `n` changes, the state
 * channel deltas are for (PROTOCOL.md "Deltas"). `expect: messages` with `"doc": true` checks it whole.
 */
export const documentOf = (n: number): Record<string, unknown> => ({
  n,
  board: Array.from({ length: 24 }, (_, i) => ({ player: `player-${i}`, team: i % 2 === 0 ? "home" : "away", rating: 6 + (i % 5) / 10, note: "steady" })),
  status: n % 3 === 0 ? "attacking" : "midfield",
});

const EXPECT_TIMEOUT_MS = 20_000;
/** Faults that do not start a `withinMs` clock: they break nothing. */
const QUIET_FAULTS = new Set(["publish", "wait"]);

/**
 * Plays `scenario` with clients from `clients` (a suite's pool, which may hand over processes kept from the
 * scenario before, or a command: a fresh process per client, closed at the end); throws with the clients'
 * events when an expectation fails.
 */
export async function runScenario(scenario: Scenario, harness: Harness, clients: ClientCommand | ClientPool): Promise<void> {
  const pool = clients instanceof ClientPool ? clients : new ClientPool(clients, { reuse: false });
  const unique = `${scenario.name}.${randomUUID().slice(0, 8)}`;
  // `$cf`: the same channel as `$ch` by its Centrifugo name (namespace `conf`), for the Centrifuge door's clients.
  const vars: Record<string, string> = { $ch: `conf.${unique}`, $cf: `conf:${unique}`, $durable: `conf-${randomUUID().slice(0, 8)}` };
  const bind = <T>(v: T): T => JSON.parse(JSON.stringify(v).replace(/\$(ch|cf|durable)\b/g, (m) => vars[m]!)) as T;
  const procs = new Map<string, ClientProcess>();
  const clientOf = (name: string): ClientProcess => procs.get(name) ?? procs.set(name, pool.take()).get(name)!;
  const replies = new Map<string, Reply>();
  const later = new Map<string, Promise<Reply>>(); // answers of `async` steps, awaited by their `expect: reply`
  const cursors = new Map<string, number>(); // per client: index of the event the last `expect: event` matched
  let passed = false;
  let faultAt = 0; // when the last fault other than publish/wait began
  // Read only by scenarios that count deltas: a scrape needs every worker to answer.
  const deltasAtStart = scenario.steps.some((s) => s.expect === "deltas") ? await harness.deltasSent?.() : undefined;
  const transcript = () => [...procs].map(([name, c]) => `client ${name} events:\n${c.events.map((e) => JSON.stringify(e)).join("\n")}`).join("\n");
  try {
    for (const [i, raw] of scenario.steps.entries()) {
      const step = bind(raw);
      const fail = (why: string): never => {
        throw new Error(`${scenario.name} step ${i + 1} ${JSON.stringify(raw)}: ${why}\n${transcript()}`);
      };
      const name = typeof step.client === "string" ? step.client : "a";
      const client = clientOf(name);
      const resolve = (v: unknown) => deref(v, replies);
      if ("fault" in step) {
        if (!QUIET_FAULTS.has(step.fault as string)) faultAt = Date.now();
        if (step.fault === "publish" && Array.isArray(step.hex))
          for (const hex of step.hex as string[]) await harness.publish(step.channel as string, bytesOfHex(hex));
        else if (step.fault === "publish") for (const n of step.n as number[]) await harness.publish(step.channel as string, step.doc ? documentOf(n) : { n });
        else await harness.fault(step.fault as string, step);
      } else if ("do" in step && step.async === true) {
        if (typeof step.as !== "string") fail('an "async" step needs "as": its answer is awaited by an expect: reply');
        const sent = client.send(await lineCommand(resolve(step) as Step, harness));
        sent.catch(() => undefined); // awaited (and failed) by its expect: reply
        later.set(step.as as string, sent);
      } else if ("do" in step) {
        const reply = await client.send(await lineCommand(resolve(step) as Step, harness));
        if (typeof step.as === "string") replies.set(step.as, reply);
        else if (!reply.ok) fail(`the client answered ${JSON.stringify(reply.error)}`);
      } else if (step.expect === "event") {
        const cursor = cursors.get(name) ?? -1;
        const want = resolve(step.match);
        const after = typeof step.withinMs === "number" ? faultAt : 0;
        const at = await poll(() => {
          const j = client.events.findIndex((e, k) => k > cursor && client.arrivals[k]! >= after && e.event === step.type && matches(e, want));
          return j >= 0 ? j : undefined;
        });
        if (at === undefined) fail(`no ${String(step.type)} event matching ${JSON.stringify(want ?? {})}`);
        const late = client.arrivals[at!]! - faultAt;
        if (typeof step.withinMs === "number" && late > step.withinMs)
          fail(`the ${String(step.type)} event came ${late} ms after the fault, over ${step.withinMs}`);
        cursors.set(name, at!);
      } else if (step.expect === "no_event") {
        const want = resolve(step.match);
        const found = client.events.find((e) => e.event === step.type && matches(e, want));
        if (found) fail(`unexpected ${JSON.stringify(found)}`);
      } else if (step.expect === "messages") {
        await checkMessages(client.events, step, fail);
      } else if (step.expect === "payloads") {
        const want = step.messages as ExpectedPayload[];
        const why = payloadMismatch(await messagesOf(client.events, step.sub, want.length), want);
        if (why) fail(`sub ${String(step.sub)}: ${why}`);
      } else if (step.expect === "reply") {
        const r = replies.get(step.of as string) ?? (await later.get(step.of as string)) ?? fail(`no reply named ${String(step.of)}`);
        if (r.ok !== (step.ok ?? true)) fail(`reply ${JSON.stringify(r)}`);
        if (step.match && !matches({ ...r.result, ...r.error }, resolve(step.match)))
          fail(`reply ${JSON.stringify(r)} does not match ${JSON.stringify(step.match)}`);
        const same = typeof step.sameSeqAs === "string" ? replies.get(step.sameSeqAs) : undefined;
        if (same && same.result?.seq !== r.result?.seq) fail(`seq ${String(r.result?.seq)} is not ${String(same.result?.seq)} (${String(step.sameSeqAs)})`);
      } else if (step.expect === "deltas") {
        if (deltasAtStart === undefined || !harness.deltasSent) fail("this harness cannot count delta frames");
        const sent = (await harness.deltasSent!()) - deltasAtStart!;
        if (sent < (step.atLeast as number)) fail(`the gateway sent ${sent} delta frames, fewer than ${String(step.atLeast)}`);
      } else if (step.expect === "backoff") {
        checkBackoff(client.events, step, fail);
      } else {
        fail("unknown step");
      }
      for (const [n, c] of procs) if (c.violations.length > 0) fail(`client ${n} wrote lines that are not protocol lines: ${JSON.stringify(c.violations)}`);
    }
    passed = true;
  } finally {
    await pool.release([...procs.values()], passed);
  }
}

/** The line-protocol command of a `do` step (tokens signed by the harness, `n` as `data: {n}`, `hex` as `bytes` in base64). */
async function lineCommand(step: Step, harness: Harness): Promise<Record<string, unknown>> {
  const { do: cmd, as: _as, client: _client, async: _async, ...rest } = step as Step & { do: string };
  const out: Record<string, unknown> = { cmd, ...rest };
  if (cmd === "connect") {
    out.url = harness.wsUrl;
    if (step.token !== false) out.token = await harness.token((step.token as TokenSpec) ?? {});
  }
  if ((cmd === "refreshToken" || cmd === "setToken") && typeof step.token === "object") out.token = await harness.token(step.token as TokenSpec);
  if (cmd === "setSubToken") {
    if (!harness.subToken) throw new Error("this harness signs no subscription tokens");
    const { subToken: spec, ...fields } = out;
    return { ...fields, token: await harness.subToken({ channel: step.channel as string, ...(spec as Omit<SubTokenSpec, "channel">) }) };
  }
  if (cmd === "publish") return { cmd, ...payloadFields(rest) };
  if (cmd === "publishBatch") out.items = (step.items as Record<string, unknown>[]).map(payloadFields);
  return out;
}

/** The `data.n` of a sub's messages are exactly `step.n`, in rising seqs unless `ordered: false`, with the `redelivered` flags asked. */
async function checkMessages(events: ClientEvent[], step: Step, fail: (why: string) => never): Promise<void> {
  const range = step.n as number[] | { from: number; to: number };
  const want = Array.isArray(range) ? range : Array.from({ length: range.to - range.from + 1 }, (_, k) => range.from + k);
  const msgs = await messagesOf(events, step.sub, want.length);
  const ns = msgs.map((m) => (m.data as { n?: unknown } | undefined)?.n);
  if (JSON.stringify(ns) !== JSON.stringify(want)) fail(`sub ${String(step.sub)} got n=${JSON.stringify(ns)}, want ${JSON.stringify(want)}`);
  const wrong = step.doc === true ? msgs.find((m) => JSON.stringify(m.data) !== JSON.stringify(documentOf((m.data as { n: number }).n))) : undefined;
  if (wrong) fail(`sub ${String(step.sub)} got a document that is not the one published: ${JSON.stringify(wrong.data)}`);
  if (Array.isArray(step.redelivered)) {
    const r = msgs.map((m) => m.redelivered === true);
    if (JSON.stringify(r) !== JSON.stringify(step.redelivered)) fail(`redelivered flags ${JSON.stringify(r)}, want ${JSON.stringify(step.redelivered)}`);
  }
  if (step.ordered !== false) {
    const seqs = msgs.map((m) => m.seq as number);
    if (seqs.some((s, k) => k > 0 && s <= seqs[k - 1]!)) fail(`seqs not strictly increasing: ${JSON.stringify(seqs)}`);
  }
}

/** The `sub`'s message events, once at least `count` have arrived or EXPECT_TIMEOUT_MS passed. */
async function messagesOf(events: ClientEvent[], sub: unknown, count: number): Promise<ClientEvent[]> {
  const got = () => events.filter((e) => e.event === "message" && e.sub === sub);
  await poll(() => (got().length >= count ? true : undefined));
  return got();
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

/** `want` with each string "$name.path" replaced by that field of the kept reply `name`'s result. */
function deref(want: unknown, replies: Map<string, Reply>): unknown {
  if (typeof want === "string") {
    const m = /^\$([A-Za-z0-9_-]+)\.(.+)$/.exec(want);
    const reply = m ? replies.get(m[1]!) : undefined;
    return reply ? m![2]!.split(".").reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], reply.result) : want;
  }
  if (Array.isArray(want)) return want.map((v) => deref(v, replies));
  if (want && typeof want === "object") return Object.fromEntries(Object.entries(want).map(([k, v]) => [k, deref(v, replies)]));
  return want;
}

/**
 * Partial deep match: objects field by field, lists of the same length item by item; `{lte: n}` / `{gte: n}`
 * compare numbers, `{length: n}` a list's length.
 */
export function matches(actual: unknown, want: unknown): boolean {
  if (want === undefined) return true;
  if (Array.isArray(want)) return Array.isArray(actual) && actual.length === want.length && want.every((w, k) => matches(actual[k], w));
  if (want && typeof want === "object") {
    const w = want as Record<string, unknown>;
    if ("lte" in w || "gte" in w)
      return typeof actual === "number" && (!("lte" in w) || actual <= (w.lte as number)) && (!("gte" in w) || actual >= (w.gte as number));
    if ("length" in w && Object.keys(w).length === 1) return Array.isArray(actual) && actual.length === w.length;
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
