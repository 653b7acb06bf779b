import { JetStreamApiError } from "@nats-io/jetstream";
import { ErrorCode } from "./protocol/codes.js";

/**
 * One error scheme. An error a client can see is a `GatewayError`: its wire code (the `code` of an `err`
 * frame or HTTP error body), the HTTP status it answers with, and whether retrying can help (`temporary`,
 * sent on `err` frames so that clients need no list of their own). The defaults per code are in
 * `WIRE_ERRORS`; an error may override them (a broker failure is temporary unless the broker refused the
 * request itself). Errors of the process (a bad setting, a missing binary) are `ProcessError`s: the CLI
 * prints them and exits.
 */
export const WIRE_ERRORS: { readonly [C in ErrorCode]: { readonly status: number; readonly temporary: boolean } } = {
  bad_json: { status: 400, temporary: false },
  unknown_op: { status: 400, temporary: false },
  bad_request: { status: 400, temporary: false },
  bad_channel: { status: 400, temporary: false },
  too_many_subscriptions: { status: 429, temporary: false },
  already_subscribed: { status: 409, temporary: false },
  not_subscribed: { status: 404, temporary: false },
  payload_too_large: { status: 413, temporary: false },
  broker_unavailable: { status: 503, temporary: true },
  broker_error: { status: 502, temporary: true },
  durable_conflict: { status: 409, temporary: false },
  unsupported_by_broker: { status: 501, temporary: false },
  unauthorized: { status: 401, temporary: false },
  forbidden: { status: 403, temporary: false },
  rate_limited: { status: 429, temporary: true },
  unknown_seq: { status: 404, temporary: false },
  shutting_down: { status: 503, temporary: true },
  internal: { status: 500, temporary: true },
  hook_unavailable: { status: 503, temporary: true },
  presence_full: { status: 409, temporary: true },
  slow_consumer: { status: 429, temporary: true },
  too_many_durables: { status: 429, temporary: false },
  durables_full: { status: 503, temporary: true },
  disconnected: { status: 410, temporary: false },
  unsubscribed: { status: 410, temporary: false },
  feature_disabled: { status: 403, temporary: false },
  rpc_error: { status: 422, temporary: false },
  rpc_unavailable: { status: 501, temporary: false },
  subscription_expired: { status: 401, temporary: true },
  not_found: { status: 404, temporary: false },
  method_not_allowed: { status: 405, temporary: false },
  unsupported_media_type: { status: 415, temporary: false },
  stats_unavailable: { status: 503, temporary: true },
  metrics_unavailable: { status: 503, temporary: true },
};

export type GatewayErrorOptions = {
  cause?: unknown;
  status?: number;
  temporary?: boolean;
  /** The application backend's own code for the refusal (a hook's `error.code`), passed to WebSocket clients as `appCode`. */
  appCode?: string | undefined;
};

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly temporary: boolean;
  readonly appCode?: string;
  constructor(code: ErrorCode, message: string, options: GatewayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "GatewayError";
    this.code = code;
    this.status = options.status ?? WIRE_ERRORS[code].status;
    this.temporary = options.temporary ?? WIRE_ERRORS[code].temporary;
    if (options.appCode !== undefined) this.appCode = options.appCode;
  }
}

/** Stable codes of errors that stop the process (not the wire codes). */
export type ProcessErrorCode = "ERR_CONFIG" | "ERR_UWS_FALLBACK" | "ERR_UWS_LOAD" | "ERR_STREAM_MISMATCH" | "ERR_EMBEDDED_NATS" | "ERR_EMBEDDED_REDIS";

/** The process cannot start or go on; the message says why and what to do. */
export class ProcessError extends Error {
  readonly code: ProcessErrorCode;
  constructor(code: ProcessErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "ProcessError";
    this.code = code;
  }
}

/** A bad setting: the message names the setting (env var and flag). */
export class ConfigError extends ProcessError {
  readonly setting: string;
  constructor(setting: string, message: string) {
    super("ERR_CONFIG", message);
    this.name = "ConfigError";
    this.setting = setting;
  }
}

/**
 * What a failed broker operation means for the client — the one place that decides it. Not connected:
 * `broker_unavailable` (retry). The broker refused the request itself (a JetStream API error with a 4xx
 * status: bad config, conflict, not found): `broker_error`, permanent. Anything else (a timeout, a 5xx, a
 * leader election): `broker_error`, temporary.
 */
export function brokerFailure(e: unknown, connected: boolean, what: string): GatewayError {
  if (e instanceof GatewayError) return e;
  if (!connected) return new GatewayError(ErrorCode.BrokerUnavailable, "broker is not connected; retry", { cause: e });
  const refused = e instanceof JetStreamApiError && e.status >= 400 && e.status < 500;
  return new GatewayError(ErrorCode.BrokerError, `${what} failed: ${(e as Error)?.message ?? String(e)}`, { cause: e, temporary: !refused });
}
