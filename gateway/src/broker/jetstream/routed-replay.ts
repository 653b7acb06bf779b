import type { LastValuePage, PageBounds, ReplayApi, StoredPage, StreamScope, StreamState, BrokerMessage } from "../broker.js";
import type { StreamPart } from "./stream-part.js";

/**
 * The broker's ReplayApi over its streams: each read goes to the part of the pattern's stream (the default
 * stream, or its namespace's). A pattern that spans namespaces throws `bad_channel` from `partOf`.
 */
export class RoutedReplay implements ReplayApi {
  constructor(private readonly partOf: (pattern: string) => StreamPart) {}

  state(pattern: string): Promise<StreamState> {
    return this.partOf(pattern).state();
  }

  streamOf(pattern: string): StreamScope {
    const part = this.partOf(pattern);
    return { name: part.spec.stream, read: (from, target) => part.replay.read(">", from, target) };
  }

  startOfLastN(pattern: string, n: number): Promise<number> {
    return this.partOf(pattern).replay.startOfLastN(pattern, n);
  }

  seqAtTime(pattern: string, time: string): Promise<number> {
    return this.partOf(pattern).replay.seqAtTime(pattern, time);
  }

  read(pattern: string, from: number, target: number): Promise<StoredPage> {
    return this.partOf(pattern).replay.read(pattern, from, target);
  }

  history(channel: string, fromSeq: number, limit: number, maxBytes?: number): Promise<{ messages: BrokerMessage[]; more: boolean }> {
    return this.partOf(channel).replay.history(channel, fromSeq, limit, maxBytes);
  }

  historyBack(channel: string, before: number, limit: number, maxBytes?: number): Promise<{ messages: BrokerMessage[]; more: boolean }> {
    return this.partOf(channel).replay.historyBack(channel, before, limit, maxBytes);
  }

  reach(pattern: string, seq: number): Promise<void> {
    return this.partOf(pattern).replay.reach(pattern, seq);
  }

  lastPerSubject(pattern: string, upTo: number, after: number, bounds?: PageBounds): Promise<LastValuePage> {
    return this.partOf(pattern).replay.lastPerSubject(pattern, upTo, after, bounds);
  }
}
