import type { Broker, PublishResult } from "../broker/broker.js";
import type { Config } from "../config/config.js";
import type { Logger } from "../log.js";
import type { Metrics } from "../metrics/metrics.js";
import { ErrorCode } from "../protocol/codes.js";
import { brokerFailure, GatewayError } from "../errors.js";

type PublishContext = { config: Config; broker: Broker; metrics: Metrics; log: Logger; isDraining: () => boolean };

/** Publishes one JSON value (from WS or HTTP) with an optional dedup id; the shared path for both. */
export async function publishOnce(ctx: PublishContext, via: "ws" | "http", channel: string, data: unknown, msgId?: string, encoded?: Uint8Array): Promise<PublishResult> {
  const m = ctx.metrics;
  const [ok, dup, err] = via === "ws" ? [m.publishOk, m.publishDuplicate, m.publishError] : [m.httpPublishOk, m.httpPublishDuplicate, m.httpPublishError];
  const payload = encoded ?? Buffer.from(JSON.stringify(data));
  if (payload.length > ctx.config.maxPayloadBytes) {
    err.inc();
    throw new GatewayError(ErrorCode.PayloadTooLarge, `payload is ${payload.length} bytes; the limit is ${ctx.config.maxPayloadBytes}`);
  }
  if (!ctx.broker.isConnected()) {
    err.inc();
    throw new GatewayError(ErrorCode.BrokerUnavailable, "broker is not connected; retry");
  }
  const end = m.publishDuration.startTimer();
  try {
    const r = await ctx.broker.publish(channel, payload, msgId);
    end();
    (r.duplicate ? dup : ok).inc();
    return r;
  } catch (e) {
    err.inc();
    if (ctx.log.isLevelEnabled("debug")) ctx.log.debug({ err: e, channel }, "publish failed");
    throw brokerFailure(e, ctx.broker.isConnected(), "publish");
  }
}
