import { AckPolicy, DeliverPolicy, type ConsumerConfig, type JetStreamManager } from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import type { SubjectMapper } from "../protocol/channel.js";
import type { Logger } from "../log.js";
import { PullReader } from "./pull-reader.js";
import type { BrokerMessage, Reader, ReaderHandlers, ReaderPosition, ReplayApi, StreamBounds } from "./broker.js";

/** Replay and history on the JetStream stream: pull readers, `last N` resolution, direct-get batches. */
export class JetStreamReplay implements ReplayApi {
  constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
    private readonly mapper: SubjectMapper,
    private readonly log: Logger,
  ) {}

  async bounds(): Promise<StreamBounds> {
    const si = await this.jsm.streams.info(this.stream);
    return { firstSeq: si.state.first_seq, lastSeq: si.state.last_seq };
  }

  /** Matching messages with seq >= start, from a throwaway consumer's num_pending. */
  private async pendingFrom(subject: string, start: number): Promise<number> {
    const ci = await this.jsm.consumers.add(this.stream, {
      filter_subject: subject, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: start,
      ack_policy: AckPolicy.None, inactive_threshold: nanos(5_000), mem_storage: true, num_replicas: 1,
    });
    this.jsm.consumers.delete(this.stream, ci.name).catch(() => undefined);
    return ci.num_pending;
  }

  async startOfLastN(pattern: string, n: number): Promise<number> {
    const subject = this.mapper.toSubject(pattern);
    const { firstSeq, lastSeq } = await this.bounds();
    // An empty stream reports first_seq 0 (fresh) or last_seq + 1 (purged): nothing to count back over.
    if (lastSeq === 0 || lastSeq < firstSeq) return Math.max(firstSeq, lastSeq + 1, 1);
    if ((await this.pendingFrom(subject, firstSeq)) <= n) return firstSeq;
    // Largest start with at least n matching messages at or after it: binary search, ~log2(stream) lookups.
    let lo = firstSeq;
    let hi = lastSeq;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if ((await this.pendingFrom(subject, mid)) >= n) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  async reader(pattern: string, position: ReaderPosition, windowBytes: number, handlers: ReaderHandlers): Promise<Reader> {
    const start: Partial<ConsumerConfig> =
      position === "all" ? { deliver_policy: DeliverPolicy.All }
      : "seq" in position ? { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: position.seq }
      : { deliver_policy: DeliverPolicy.StartTime, opt_start_time: position.time };
    const mapper = this.mapper;
    return PullReader.open({
      nc: this.nc, jsm: this.jsm, stream: this.stream, subject: mapper.toSubject(pattern), toChannel: (s) => mapper.toChannel(s),
      position: start, windowBytes, maxMessages: 1_024, log: this.log,
    }, handlers);
  }

  async history(channel: string, fromSeq: number, limit: number): Promise<BrokerMessage[]> {
    const out: BrokerMessage[] = [];
    try {
      const iter = await this.jsm.direct.getBatch(this.stream, { seq: fromSeq, batch: limit, next_by_subj: this.mapper.toSubject(channel) });
      for await (const sm of iter) {
        out.push({ channel: this.mapper.toChannel(sm.subject), seq: sm.seq, ts: Date.parse(sm.timestamp), payload: sm.data });
        if (out.length >= limit) break;
      }
    } catch (e) {
      // A direct get past the channel's last message answers 404 "message not found": that is an empty page.
      if (!/message not found|no message/i.test(String((e as Error).message))) throw e;
    }
    return out;
  }
}
