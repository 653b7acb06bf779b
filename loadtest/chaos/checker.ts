// The chaos run's delivery checker: pure, no sockets. It compares what every client received with what the
// stream holds at the end (the truth) and counts the broken promises:
// - ordered subscribers (WebSocket resume, SSE): every stored message of the pattern from their start seq,
//   once, in seq order per channel (lost / duplicated / outOfOrder; a seq whose payload id differs from the
//   stream's is `mismatched`);
// - durables: every stored message of the pattern at least once (durableLost); a second delivery of a seq is
//   fine only when flagged `redelivered` (else durableDuplicated); still unacked at the end is reported;
// - publishers: every acknowledged publish is in the stream at the seq it was told, with its id (ackedMissing);
//   a failed publish that was stored anyway is counted apart (failedButStored, not a violation: the
//   publisher was told it may not have been stored); one id stored twice is `storedTwice`.

/** One message of the stream, as read at the end of the run. */
export type StoredMsg = { seq: number; channel: string; id?: string };

/** One message as a subscriber received it, in arrival order. */
export type Receipt = {
  t: number;
  channel: string;
  seq: number;
  id?: string;
  redelivered?: boolean;
  latencyMs?: number;
  /** Which of the subscriber's connections it came on (1, 2, …): tells a duplicate within one from one across a resume. */
  conn?: number;
};

export type SubscriberKind = "resume" | "sse" | "durable";

export type SubscriberLog = {
  client: string;
  kind: SubscriberKind;
  pattern: string;
  /** First stream seq the subscriber is owed (it subscribed before any later message was published). */
  fromSeq: number;
  receipts: Receipt[];
  /** Durables: the seqs it acked. */
  acked?: number[];
};

export type PublishRecord = { id: string; channel: string; via: string; t0: number; t1: number; seq?: number; error?: string };

export type Violation = {
  client: string;
  what: "lost" | "duplicated" | "outOfOrder" | "mismatched" | "durableLost" | "durableDuplicated" | "ackedMissing" | "storedTwice";
  channel?: string;
  seq?: number;
  detail?: string;
};

export type CheckCounts = {
  lost: number;
  duplicated: number;
  outOfOrder: number;
  mismatched: number;
  durableLost: number;
  durableDuplicated: number;
  ackedMissing: number;
  storedTwice: number;
};

export type CheckResult = CheckCounts & {
  /** Informational, not violations. */
  received: number;
  expected: number;
  redelivered: number;
  durableUnacked: number;
  published: { acked: number; failed: number; failedButStored: number };
  perClient: Array<{ client: string; kind: string; pattern: string; expected: number; received: number; lost: number; duplicated: number; outOfOrder: number }>;
  /** The first violations in detail (at most `maxDetail`). */
  violations: Violation[];
  ok: boolean;
};

export const VIOLATION_KEYS: ReadonlyArray<keyof CheckCounts> = [
  "lost",
  "duplicated",
  "outOfOrder",
  "mismatched",
  "durableLost",
  "durableDuplicated",
  "ackedMissing",
  "storedTwice",
];

/** NATS subject matching on dot tokens: `*` one token, a final `>` one or more. */
export function matches(pattern: string, channel: string): boolean {
  const p = pattern.split(".");
  const c = channel.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return i === p.length - 1 && c.length > i;
    if (i >= c.length) return false;
    if (p[i] !== "*" && p[i] !== c[i]) return false;
  }
  return p.length === c.length;
}

export function check(truth: StoredMsg[], subscribers: SubscriberLog[], publishes: PublishRecord[], maxDetail = 50): CheckResult {
  const bySeq = new Map<number, StoredMsg>();
  for (const m of truth) bySeq.set(m.seq, m);
  const r: CheckResult = {
    lost: 0,
    duplicated: 0,
    outOfOrder: 0,
    mismatched: 0,
    durableLost: 0,
    durableDuplicated: 0,
    ackedMissing: 0,
    storedTwice: 0,
    received: 0,
    expected: 0,
    redelivered: 0,
    durableUnacked: 0,
    published: { acked: 0, failed: 0, failedButStored: 0 },
    perClient: [],
    violations: [],
    ok: true,
  };
  const flag = (v: Violation): void => {
    r[v.what]++;
    if (r.violations.length < maxDetail) r.violations.push(v);
  };

  for (const s of subscribers) {
    const owed = truth.filter((m) => m.seq >= s.fromSeq && matches(s.pattern, m.channel));
    const before = { lost: r.lost + r.durableLost, duplicated: r.duplicated + r.durableDuplicated, outOfOrder: r.outOfOrder };
    r.expected += owed.length;
    r.received += s.receipts.length;
    const seen = new Set<number>();
    const lastByChannel = new Map<string, number>();
    for (const x of s.receipts) {
      const stored = bySeq.get(x.seq);
      if (!stored || stored.channel !== x.channel || (stored.id !== undefined && x.id !== undefined && stored.id !== x.id)) {
        flag({
          client: s.client,
          what: "mismatched",
          channel: x.channel,
          seq: x.seq,
          detail: stored ? `stream has ${stored.channel} ${stored.id ?? ""}, got ${x.id ?? ""}` : "seq not in the stream",
        });
      }
      if (x.redelivered) r.redelivered++;
      if (s.kind === "durable") {
        if (seen.has(x.seq) && !x.redelivered)
          flag({ client: s.client, what: "durableDuplicated", channel: x.channel, seq: x.seq, detail: "delivered again without the redelivered flag" });
        seen.add(x.seq);
        continue;
      }
      const last = lastByChannel.get(x.channel) ?? 0;
      if (seen.has(x.seq)) flag({ client: s.client, what: "duplicated", channel: x.channel, seq: x.seq });
      else if (x.seq < last) flag({ client: s.client, what: "outOfOrder", channel: x.channel, seq: x.seq, detail: `after ${last}` });
      seen.add(x.seq);
      if (x.seq > last) lastByChannel.set(x.channel, x.seq);
    }
    for (const m of owed) {
      if (!seen.has(m.seq)) flag({ client: s.client, what: s.kind === "durable" ? "durableLost" : "lost", channel: m.channel, seq: m.seq });
    }
    if (s.kind === "durable") {
      const acked = new Set(s.acked ?? []);
      r.durableUnacked += owed.filter((m) => !acked.has(m.seq)).length;
    }
    r.perClient.push({
      client: s.client,
      kind: s.kind,
      pattern: s.pattern,
      expected: owed.length,
      received: s.receipts.length,
      lost: r.lost + r.durableLost - before.lost,
      duplicated: r.duplicated + r.durableDuplicated - before.duplicated,
      outOfOrder: r.outOfOrder - before.outOfOrder,
    });
  }

  const storedIds = new Map<string, number>();
  for (const m of truth) {
    if (m.id === undefined) continue;
    const n = (storedIds.get(m.id) ?? 0) + 1;
    storedIds.set(m.id, n);
    if (n === 2) flag({ client: "stream", what: "storedTwice", channel: m.channel, seq: m.seq, detail: m.id });
  }
  for (const p of publishes) {
    if (p.seq !== undefined) {
      r.published.acked++;
      const stored = bySeq.get(p.seq);
      if (!stored || stored.id !== p.id)
        flag({
          client: p.via,
          what: "ackedMissing",
          channel: p.channel,
          seq: p.seq,
          detail: `${p.id}: ${stored ? `seq holds ${stored.id ?? "another message"}` : "seq not in the stream"}`,
        });
    } else {
      r.published.failed++;
      if (storedIds.has(p.id)) r.published.failedButStored++;
    }
  }
  r.ok = VIOLATION_KEYS.every((k) => r[k] === 0);
  return r;
}
