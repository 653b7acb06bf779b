import { createHash } from "node:crypto";
import {
  AckPolicy,
  DeliverPolicy,
  type ConsumerConfig,
  type JetStreamClient,
  type JetStreamManager,
  JetStreamApiCodes,
  JetStreamApiError,
} from "@nats-io/jetstream";
import { nanos, type NatsConnection } from "@nats-io/transport-node";
import type { SubjectMapper } from "../../protocol/channel.js";
import type { Logger } from "../../log.js";
import { brokerTimeMs } from "./time.js";
import { CONTENT_TYPE_HEADER, storedType } from "../../protocol/content-type.js";
import type { DurableApi, DurableDelivery, DurableSpec, Running } from "../broker.js";
import { GatewayError } from "../../errors.js";
import { ErrorCode } from "../../protocol/codes.js";
import { DurableQuota } from "./durable-quota.js";
import { callbackFaults } from "../../util/guarded.js";

export type DurableSettings = {
  ackWaitMs: number;
  maxDeliver: number;
  inactiveMs: number;
  /** Durable names per user, counted over the stream's consumers; -1 unlimited. */
  maxPerUser: number;
};

/** nats-server's JSMaximumConsumersLimitErr (server/errors.json): the stream or account consumer limit. */
export const JS_MAXIMUM_CONSUMERS_LIMIT = 10026;

/** The part of a consumer name that says whose durable it is. */
export function consumerPrefix(user: string): string {
  return `fgw_${createHash("sha256").update(user).digest("hex").slice(0, 16)}_`;
}

/** The pull requests of a durable binding (see bind()). */
const PULL_EXPIRES_MS = 10_000;
const PULL_HEARTBEAT_MS = 2_500;

/** JetStream consumer name of a user's durable: users never share names, whatever characters they use. */
export function consumerName(user: string, durable: string): string {
  return consumerPrefix(user) + durable;
}

type NamesPage = { total?: number; consumers?: string[] | null; error?: { code: number; err_code: number; description: string } };

/** Every consumer name of `stream`, page by page ($JS.API.CONSUMER.NAMES: names only, lighter than LIST). */
async function consumerNames(nc: NatsConnection, stream: string): Promise<string[]> {
  const out: string[] = [];
  for (let page = 0; page < 1_000; page++) {
    const r = (await nc.request(`$JS.API.CONSUMER.NAMES.${stream}`, JSON.stringify({ offset: out.length }), { timeout: 5_000 })).json<NamesPage>();
    if (r.error) throw new JetStreamApiError(r.error);
    const got = r.consumers ?? [];
    out.push(...got);
    if (got.length === 0 || out.length >= (r.total ?? 0)) break;
  }
  return out;
}

/**
 * Durable, acked subscriptions: one JetStream durable pull consumer per (user, name), shared by every socket
 * bound to it — each socket pulls, so messages are spread over them (competing consumers).
 */
export class JetStreamDurables implements DurableApi {
  private readonly quota: DurableQuota;

  constructor(
    nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly stream: string,
    private readonly mapper: SubjectMapper,
    private readonly settings: DurableSettings,
    private readonly log: Logger,
  ) {
    this.quota = new DurableQuota(() => consumerNames(nc, stream), { maxPerUser: settings.maxPerUser });
  }

  private async ensure(spec: DurableSpec): Promise<string> {
    const name = consumerName(spec.user, spec.durable);
    const subject = this.mapper.toSubject(spec.pattern);
    const config: Partial<ConsumerConfig> = {
      durable_name: name,
      ack_policy: AckPolicy.Explicit,
      ack_wait: nanos(this.settings.ackWaitMs),
      max_deliver: this.settings.maxDeliver,
      max_ack_pending: spec.maxInflight,
      inactive_threshold: nanos(this.settings.inactiveMs),
      filter_subject: subject,
      deliver_policy: DeliverPolicy.New,
      metadata: { "fgw-user": spec.user.slice(0, 256), "fgw-durable": spec.durable },
    };
    try {
      const ci = await this.jsm.consumers.info(this.stream, name);
      if (ci.config.filter_subject !== subject) {
        throw new GatewayError(
          ErrorCode.DurableConflict,
          `durable ${spec.durable} is bound to channel ${this.mapper.toChannel(ci.config.filter_subject ?? "")}: use another durable name`,
        );
      }
      if (ci.config.max_ack_pending !== spec.maxInflight) {
        await this.jsm.consumers.update(this.stream, name, { max_ack_pending: spec.maxInflight });
      }
      return name;
    } catch (e) {
      if (e instanceof GatewayError) throw e;
      if (!(e instanceof JetStreamApiError && e.code === JetStreamApiCodes.ConsumerNotFound)) throw e;
    }
    await this.quota.admit(consumerPrefix(spec.user), name);
    try {
      await this.jsm.consumers.add(this.stream, config);
    } catch (e) {
      if (e instanceof JetStreamApiError && e.code === JS_MAXIMUM_CONSUMERS_LIMIT) {
        throw new GatewayError(ErrorCode.DurablesFull, "the stream holds as many consumers as it allows: retry when unused durables expire", { cause: e });
      }
      throw e;
    }
    this.quota.created(name);
    this.log.info({ consumer: name, durable: spec.durable, pattern: spec.pattern }, "durable consumer created");
    return name;
  }

  async bind(spec: DurableSpec, onMessage: (d: DurableDelivery) => void): Promise<Running> {
    const name = await this.ensure(spec);
    const consumer = await this.js.consumers.get(this.stream, name);
    const mapper = this.mapper;
    const log = this.log;
    const messages = await consumer.consume({
      max_messages: spec.maxInflight,
      // A pull request lives on the consumer's leader: when the leader changes (a node dies, a step-down)
      // while this connection stays up, the request is gone and nats.js pulls again only after two missed
      // idle heartbeats. With its defaults (30 s expiry, 15 s heartbeat) a durable stalled for ~30 s in the
      // chaos run; heartbeats every 2.5 s bring that to ~5 s, at one small status message per binding.
      expires: PULL_EXPIRES_MS,
      idle_heartbeat: PULL_HEARTBEAT_MS,
      callback: (m) => {
        try {
          onMessage({
            channel: mapper.toChannel(m.subject),
            seq: m.seq,
            ts: brokerTimeMs(m),
            payload: m.data,
            type: m.headers ? storedType(m.headers.get(CONTENT_TYPE_HEADER)) : undefined,
            redelivered: m.redelivered,
            deliveries: m.info.deliveryCount,
            ack: () => m.ack(),
            nak: (d?: number) => m.nak(d),
            term: () => m.term(),
            working: () => m.working(),
          });
        } catch (e) {
          callbackFaults.fault("durable", e);
          log.debug({ err: e, durable: spec.durable }, "durable callback failed");
        }
      },
    });
    return {
      stop: async () => {
        messages.stop();
        await messages.closed().catch(() => undefined);
      },
    };
  }
}
