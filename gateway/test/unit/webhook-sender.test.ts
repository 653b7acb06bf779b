// The webhook sender in process: a fake events stream, a fake backend and the real lease over a memory
// store, so the turn, the heartbeats, the hand-back and the slots are checked without servers or timing luck.
import { afterEach, describe, expect, it } from "vitest";
import type { EventSource, StoredEvent } from "../../src/broker/events.js";
import type { LeaseRecord, LeaseStore } from "../../src/broker/broker.js";
import type { CallResult } from "../../src/backend/caller.js";
import { LeaderLease } from "../../src/services/leader-lease.js";
import type { SenderTimings } from "../../src/events/webhook-timings.js";
import { WebhookSender } from "../../src/events/webhook.js";
import { createLogger } from "../../src/log.js";
import { waitFor } from "#testkit/wait.js";

type Marks = { working: number; acked: boolean; naked: boolean };

/**
 * The events stream's durable consumer in memory: hands out what is not out, in order; nak puts events back.
 * `expiring`: events whose ack wait runs out during the next pull, which JetStream hands out in that pull after
 * the new ones (checked against nats-server 2.15: a pull waiting for more got new 6 and 7, then 1 to 5).
 */
class FakeSource implements EventSource {
  next = 1;
  stored = 0;
  readonly back: number[] = [];
  expiring: number[] = [];
  readonly marks = new Map<number, Marks>();
  fetches = 0;
  async fetch(max: number): Promise<StoredEvent[]> {
    this.fetches++;
    const seqs = [...this.back.splice(0, max)];
    while (seqs.length < max && this.next <= this.stored) seqs.push(this.next++);
    seqs.push(...this.expiring.splice(0, max - seqs.length));
    if (seqs.length === 0) await new Promise((r) => setTimeout(r, 5));
    return seqs.map((seq) => {
      const m: Marks = { working: 0, acked: false, naked: false };
      this.marks.set(seq, m);
      return {
        seq,
        json: `{"type":"connect","n":${seq}}`,
        working: () => m.working++,
        ack: () => (m.acked = true),
        nak: () => {
          m.naked = true;
          this.back.push(seq);
        },
      };
    });
  }
  async firstSeq() {
    return 1;
  }
  async outstanding() {
    // As the consumer counts them: every event handed out and not acknowledged, given back or not.
    return [...this.marks.values()].filter((m) => !m.acked).length;
  }
  async lag() {
    return { pending: 0 };
  }
}

/** A backend whose answers the test gives, one call at a time or all at once. */
class FakeBackend {
  readonly bodies: string[] = [];
  open = 0;
  maxOpen = 0;
  status = 200;
  private readonly held: (() => void)[] = [];
  hold = false;
  async post(_hook: string, _url: string, body: string): Promise<CallResult> {
    this.bodies.push(body);
    this.open++;
    this.maxOpen = Math.max(this.maxOpen, this.open);
    if (this.hold) await new Promise<void>((r) => this.held.push(r));
    this.open--;
    return { status: this.status, ok: this.status < 300, text: "" };
  }
  release() {
    for (const r of this.held.splice(0)) r();
  }
  warn() {}
}

class MemoryLeaseStore implements LeaseStore {
  record?: LeaseRecord;
  private seq = 0;
  /** Reads so far: a sender not holding the lease reads it once a tick. */
  reads = 0;
  async read() {
    this.reads++;
    return this.record && { ...this.record };
  }
  /** Resolves once `n` more ticks of a sender not holding the lease have passed. */
  ticks(n: number) {
    const until = this.reads + n;
    return waitFor(() => this.reads >= until, { timeoutMs: 2_000, what: `${n} ticks` });
  }
  async write(holder: string, after: number) {
    if ((this.record?.seq ?? 0) !== after) return undefined;
    this.record = { seq: ++this.seq, holder };
    return this.seq;
  }
}

const log = createLogger("silent", {});
const ordered: SenderTimings = { ordered: true, tickMs: 10, holdMs: 30, ackWaitMs: 50, leaseMs: 100 };
const config = { url: "http://backend.invalid/events", batch: 3, waitMs: 1_000, backoffMaxMs: 100, concurrency: 1 };
const ids = (body: string) => (JSON.parse(body) as { events: { id: number }[] }).events.map((e) => e.id);
const senders: WebhookSender[] = [];
const started = (s: WebhookSender) => {
  senders.push(s);
  s.start();
  return s;
};
afterEach(async () => {
  for (const s of senders.splice(0)) await s.stop();
});

describe("events — the webhook sender in process", () => {
  it("events — ordered: only the instance holding the lease pulls; batches go one at a time in order", async () => {
    const source = Object.assign(new FakeSource(), { stored: 7 });
    const store = new MemoryLeaseStore();
    await new LeaderLease(store, "other", ordered.holdMs).tick(); // another instance holds the turn (and never renews)
    const backend = new FakeBackend();
    const sender = started(new WebhookSender(source, backend, config, ordered, log, undefined, new LeaderLease(store, "me", ordered.holdMs)));
    await store.ticks(5);
    expect(source.fetches).toBe(0);
    expect(sender.state().sending).toBe(false);
    store.record = undefined; // the other's lease ran out
    await waitFor(() => backend.bodies.length >= 3, { timeoutMs: 2_000, what: "three batches" });
    expect(backend.bodies.slice(0, 3).map(ids)).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
    expect(backend.maxOpen).toBe(1);
    expect(sender.state()).toMatchObject({ sending: true, failures: 0 });
  });

  it("events — a batch retried keeps the same ids and gets working() every tick; the lease lost hands it back (nak) and stops sending", async () => {
    const source = Object.assign(new FakeSource(), { stored: 2 });
    const store = new MemoryLeaseStore();
    const backend = Object.assign(new FakeBackend(), { status: 503 });
    const lease = new LeaderLease(store, "me", ordered.holdMs);
    const sender = started(new WebhookSender(source, backend, { ...config, backoffMaxMs: 100 }, ordered, log, undefined, lease));
    await waitFor(() => backend.bodies.length >= 3, { timeoutMs: 2_000, what: "three tries" });
    expect(new Set(backend.bodies).size).toBe(1);
    expect(source.marks.get(1)!.working).toBeGreaterThan(0);
    expect(sender.state().failures).toBeGreaterThanOrEqual(3);
    expect(sender.state().failingSince).toBeDefined();
    // Another instance takes the lease (this one's renewal is refused from now on).
    store.record = { seq: 1_000, holder: "other" };
    await waitFor(() => source.marks.get(1)!.naked, { timeoutMs: 2_000, what: "the batch handed back" });
    const tries = backend.bodies.length;
    const beats = source.marks.get(1)!.working;
    await store.ticks(5);
    expect(backend.bodies.length).toBe(tries);
    expect(source.marks.get(1)!.working).toBe(beats);
    expect(source.marks.get(1)!.acked).toBe(false);
    expect(sender.state().sending).toBe(false);
  });

  it("events — a turn's first batch waits for events a previous holder still has out, then goes after them, in order", async () => {
    const source = Object.assign(new FakeSource(), { stored: 5 });
    // A holder that stopped or died took 1 and 2, and the consumer has not given them back yet (its hand-back lost
    // with a consumer leader that changed, or the ack wait not over).
    await source.fetch(2);
    const backend = new FakeBackend();
    started(new WebhookSender(source, backend, config, ordered, log, undefined, new LeaderLease(new MemoryLeaseStore(), "me", ordered.holdMs)));
    await waitFor(() => source.marks.get(5)?.working, { timeoutMs: 2_000, what: "3 to 5 pulled and kept" });
    const fetches = source.fetches;
    await waitFor(() => source.fetches >= fetches + 3, { timeoutMs: 2_000, what: "three more pulls" });
    expect(backend.bodies).toEqual([]);
    source.back.push(1, 2); // the consumer gives them back
    await waitFor(() => backend.bodies.length >= 1, { timeoutMs: 2_000, what: "a batch sent" });
    expect(backend.bodies.map(ids).flat()).toEqual([1, 2, 3, 4, 5]);
    await waitFor(() => [...source.marks.values()].every((m) => m.acked), { timeoutMs: 2_000, what: "every event acknowledged" });
  });

  it("events — a pull that brings new events before a previous holder's whose ack wait ran out during it sends them in stream order", async () => {
    // Seen in the regions chaos run (seed 11: 4 events out of order, none sent twice). A pull waits up to
    // EVENTS_WEBHOOK_WAIT for a full batch; events out with a sender that lost them (a holder that died, or this
    // one's pull cut off with its region) come back when their ack wait runs out, after the new ones of the
    // pull that is waiting then. Sent as they came, 1 and 2 reached the webhook after 3 to 5.
    const source = Object.assign(new FakeSource(), { stored: 5 });
    await source.fetch(2);
    source.expiring = [1, 2];
    const backend = new FakeBackend();
    started(
      new WebhookSender(source, backend, { ...config, batch: 5 }, ordered, log, undefined, new LeaderLease(new MemoryLeaseStore(), "me", ordered.holdMs)),
    );
    await waitFor(() => backend.bodies.length >= 1, { timeoutMs: 2_000, what: "a batch sent" });
    expect(backend.bodies.map(ids)).toEqual([[1, 2, 3, 4, 5]]);
  });

  it("events — events held for their turn and given again by the consumer go once each, and only when nothing earlier is out", async () => {
    const source = Object.assign(new FakeSource(), { stored: 5 });
    await source.fetch(2); // 1 and 2 out with a previous holder
    const backend = new FakeBackend();
    started(
      new WebhookSender(source, backend, { ...config, batch: 5 }, ordered, log, undefined, new LeaderLease(new MemoryLeaseStore(), "me", ordered.holdMs)),
    );
    await waitFor(() => source.marks.get(5)?.working, { timeoutMs: 2_000, what: "3 to 5 pulled and held" });
    // The consumer hands 3 to 5 out again (their heartbeats lost): 3 to 5 twice would count as six events
    // against five out, and go before 1 and 2.
    source.back.push(3, 4, 5);
    const fetches = source.fetches;
    await waitFor(() => source.fetches >= fetches + 3, { timeoutMs: 2_000, what: "three more pulls" });
    expect(backend.bodies).toEqual([]);
    source.back.push(1, 2);
    await waitFor(() => backend.bodies.length >= 1, { timeoutMs: 2_000, what: "a batch sent" });
    expect(backend.bodies.map(ids)).toEqual([[1, 2, 3, 4, 5]]);
  });

  it("events — a call that outlasts several ticks keeps its batch: working() while it is open", async () => {
    const source = Object.assign(new FakeSource(), { stored: 1 });
    const backend = Object.assign(new FakeBackend(), { hold: true });
    started(new WebhookSender(source, backend, config, ordered, log, undefined, new LeaderLease(new MemoryLeaseStore(), "me", ordered.holdMs)));
    await waitFor(() => backend.open === 1, { timeoutMs: 2_000, what: "a call open" });
    await waitFor(() => source.marks.get(1)!.working >= 3, { timeoutMs: 2_000, what: "heartbeats during the call" });
    backend.release();
    await waitFor(() => source.marks.get(1)!.acked, { timeoutMs: 2_000, what: "the ack" });
  });

  it("events — unordered (EVENTS_WEBHOOK_CONCURRENCY 3): no lease, three batches in flight at once", async () => {
    const source = Object.assign(new FakeSource(), { stored: 9 });
    const backend = Object.assign(new FakeBackend(), { hold: true });
    const unordered: SenderTimings = { ordered: false, tickMs: 10, holdMs: Infinity, ackWaitMs: 100, leaseMs: 0 };
    const sender = started(new WebhookSender(source, backend, { ...config, concurrency: 3 }, unordered, log));
    await waitFor(() => backend.open === 3, { timeoutMs: 2_000, what: "three calls open" });
    expect(sender.state()).toMatchObject({ sending: true, inFlight: 3 });
    expect(
      backend.bodies
        .map(ids)
        .flat()
        .sort((a, b) => a - b),
    ).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    backend.release();
    await waitFor(() => [...source.marks.values()].every((m) => m.acked), { timeoutMs: 2_000, what: "every event acknowledged" });
  });

  it("events — stopping mid-retry hands the batch back and releases the lease", async () => {
    const source = Object.assign(new FakeSource(), { stored: 1 });
    const store = new MemoryLeaseStore();
    const backend = Object.assign(new FakeBackend(), { status: 500 });
    const sender = new WebhookSender(source, backend, config, ordered, log, undefined, new LeaderLease(store, "me", ordered.holdMs));
    sender.start();
    await waitFor(() => backend.bodies.length >= 1, { timeoutMs: 2_000, what: "a refused try" });
    await sender.stop();
    expect(source.marks.get(1)!.naked).toBe(true);
    expect(store.record?.holder).toBe("");
  });
});
