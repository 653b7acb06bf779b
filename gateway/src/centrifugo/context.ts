import { createHash } from "node:crypto";
import type { Access, AccessControl, Identity, Knock } from "../auth/access.js";
import { publisherOf, refusal } from "../auth/access.js";
import { ErrorCode } from "../protocol/codes.js";
import type { Broker } from "../broker/broker.js";
import type { ControlService } from "../control/service.js";
import type { ReadLimiter } from "../limits/read-limits.js";
import { publishRefusal, type PublishLimiter } from "../limits/publish-limits.js";
import type { Logger } from "../log.js";
import type { Counter } from "prom-client";
import type { PresenceHub } from "../presence/hub.js";
import type { PublishService } from "../publish/service.js";
import { ApiCode, apiErrorOf, fail, type ApiError } from "./codes.js";

/** What the server API's methods use: the same services, chain and allowances as the native doors. */
export type ServerApiDeps = {
  access: AccessControl;
  publisher: PublishService;
  broker: Broker;
  control: ControlService;
  presence?: PresenceHub | undefined;
  /** HTTP publish allowances (PUBLISH_RATE …), shared with `POST /v1/publish`. */
  publishLimits?: PublishLimiter | undefined;
  /** Read allowances (READ_RATE_PER_IP …), shared with history and SSE. */
  reads?: ReadLimiter | undefined;
  /** HISTORY_MAX_BYTES. */
  historyMaxBytes: number;
  /** PUBLISH_BATCH_MAX_ITEMS: channels of a broadcast, commands of a batch. */
  maxItems: number;
  /** The `/v1/stats` body of this instance (the primary's). */
  instanceStats: () => Promise<string>;
  /** This instance, as the control plane names it (`host:pid`). */
  instance: string;
  /** The gateway's version (package.json), as `info` gives it. */
  version: string;
  /** `fanout_centrifugo_api_calls_total{method,result}`. */
  calls: Counter<"method" | "result">;
  log: Logger;
};

/** Who calls: the identity the chain gave the request's key, its credentials, and whether it came from this host. */
export type Caller = { identity: Identity; knock: Knock; local: boolean };

/** The rest of the chain for one method's access: undefined when allowed, else the error to answer. */
export async function refusedAccess(access: AccessControl, who: Caller, a: Access): Promise<{ error: ApiError } | undefined> {
  try {
    await access.authorize(who.identity, a);
    return undefined;
  } catch (e) {
    const r = refusal(e);
    if (r.code === ErrorCode.Internal) access.log?.error({ err: e }, "authorization failed unexpectedly");
    return { error: apiErrorOf(r) };
  }
}

/** Takes `n` messages of the caller's publish allowance; the error to answer when it is spent. */
export function spentAllowance(d: ServerApiDeps, who: Caller, n: number): { error: ApiError } | undefined {
  const publisher = publisherOf(who.identity, who.knock);
  const v = d.publishLimits?.take(publisher, n, Date.now());
  if (!v || v.ok) return undefined;
  const r = publishRefusal(publisher, v);
  return fail(ApiCode.TooManyRequests, `${r.message} (retry after ${r.retryAfterSec} s)`);
}

/**
 * The dedup id of a Centrifugo `idempotency_key`: Centrifugo scopes a key to its channel, the stream's
 * duplicate window (STREAM_DUPLICATE_WINDOW) to the stream, so the id is derived from both.
 */
export const msgIdOf = (key: string | undefined, channel: string): string | undefined =>
  key === undefined ? undefined : `cf-${createHash("sha256").update(channel).update("\n").update(key).digest("base64url").slice(0, 32)}`;
