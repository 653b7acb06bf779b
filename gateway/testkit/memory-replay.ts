// A memory stream for unit tests of the replay path: many channels, read in pages like direct gets.
import type { BrokerMessage, ReplayApi, StoredPage } from "../src/broker/broker.js";
import { matches } from "../src/protocol/channel.js";

/** A memory stream of many channels, read in pages like direct gets; reads wait until `release()`. */
export class MemoryReplay implements ReplayApi {
  msgs: BrokerMessage[] = [];
  reads: { pattern: string; from: number }[] = [];
  private gate: (() => void)[] = [];
  held = false;
  constructor(private readonly pageSize = 50) {}
  append(channel: string): number {
    const seq = this.msgs.length + 1;
    this.msgs.push({ channel, seq, ts: seq, payload: new TextEncoder().encode(`{"s":${seq}}`) });
    return seq;
  }
  async read(pattern: string, from: number, target: number): Promise<StoredPage> {
    this.reads.push({ pattern, from });
    if (this.held) await new Promise<void>((r) => this.gate.push(r));
    const all = this.msgs.filter((m) => m.seq >= from && matches(pattern, m.channel));
    const messages = all.slice(0, this.pageSize);
    const last = messages.at(-1)?.seq ?? from - 1;
    return { messages, coverEnd: all.length > messages.length ? last : Math.max(last, target) };
  }
  release(): void {
    this.held = false;
    for (const g of this.gate.splice(0)) g();
  }
  state = async () => ({ firstSeq: 1, lastSeq: this.msgs.length, epoch: "e" });
  startOfLastN = async () => 1;
  seqAtTime = async () => 1;
  history = async () => ({ messages: [], more: false });
}
