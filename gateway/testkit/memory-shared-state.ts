// The cluster's shared state in memory, for unit tests of the services beside the workers: the contract of
// SharedStateApi (broker/broker.ts) without NATS; keys with a TTL expire when the test moves `now`.
import type { LeaseStore, SharedRecord, SharedStateApi } from "../src/broker/broker.js";

type Entry = { seq: number; value: string; expiresAt?: number };

export class MemorySharedState implements SharedStateApi {
  now = 0;
  /** Set to make the next announcement fail (a leader dying between its two writes). */
  failAnnounce = false;
  private seq = 0;
  private readonly entries = new Map<string, Entry>();
  private readonly watchers = new Set<(key: string, e: Entry | undefined, seq: number) => void>();

  constructor(private readonly ttlMs: number) {}

  /** Moves the clock: entries past their TTL expire, and the watchers see their removal. */
  advance(ms: number): void {
    this.now += ms;
    for (const [key, e] of [...this.entries]) if (e.expiresAt !== undefined && e.expiresAt <= this.now) this.write(key, undefined);
  }

  /** Whether `key` (`i.<instance>`, `s.<key>.<instance>`, …) is set now. */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  async heartbeat(instance: string): Promise<"kept" | "renewed"> {
    const had = this.entries.has(`i.${instance}`);
    this.write(`i.${instance}`, "1", this.ttlMs);
    return had ? "kept" : "renewed";
  }

  async share(key: string, instance: string, held: boolean): Promise<void> {
    this.write(`s.${key}.${instance}`, held ? "1" : undefined);
  }

  async forget(shares: readonly { key: string; instance: string }[]): Promise<void> {
    for (const s of shares) this.write(`s.${s.key}.${s.instance}`, undefined);
  }

  /** The leader's lease: a record written over the expected sequence, expiring after the TTL. */
  leaderLease(): LeaseStore {
    return {
      read: async () => {
        const e = this.entries.get("leader");
        return e && { seq: e.seq, holder: e.value };
      },
      write: async (holder, after) => {
        if ((this.entries.get("leader")?.seq ?? 0) !== after) return undefined;
        return this.write("leader", holder, this.ttlMs);
      },
    };
  }

  async resign(instance: string): Promise<void> {
    this.write(`i.${instance}`, undefined);
  }

  async announce(key: string, on: boolean): Promise<number> {
    if (this.failAnnounce) {
      this.failAnnounce = false;
      throw new Error("announce failed");
    }
    return this.write(`a.${key}`, on ? "1" : "0");
  }

  async watch(onRecord: (r: SharedRecord) => void, onSynced: () => void): Promise<{ stop(): void }> {
    const deliver = (key: string, e: Entry | undefined, seq: number): void => {
      const r = recordOf(key, e?.value, seq);
      if (r) onRecord(r);
    };
    for (const [key, e] of [...this.entries].sort((x, y) => x[1].seq - y[1].seq)) deliver(key, e, e.seq);
    onSynced();
    this.watchers.add(deliver);
    return { stop: () => this.watchers.delete(deliver) };
  }

  private write(key: string, value: string | undefined, ttlMs?: number): number {
    const seq = ++this.seq;
    if (value === undefined) {
      if (!this.entries.delete(key)) return seq;
    } else this.entries.set(key, { seq, value, ...(ttlMs !== undefined ? { expiresAt: this.now + ttlMs } : {}) });
    for (const w of this.watchers) w(key, this.entries.get(key), seq);
    return seq;
  }
}

function recordOf(key: string, value: string | undefined, seq: number): SharedRecord | undefined {
  if (key.startsWith("i.")) return { type: "heartbeat", instance: key.slice(2), alive: value !== undefined };
  if (key.startsWith("a.")) return { type: "announced", key: key.slice(2), on: value === "1", seq };
  if (!key.startsWith("s.")) return undefined;
  const dot = key.lastIndexOf(".");
  return { type: "share", key: key.slice(2, dot), instance: key.slice(dot + 1), held: value !== undefined };
}
