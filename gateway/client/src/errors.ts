/** Failures of the client itself (not sent by a server). */
export type ClientErrorCode =
  | "bad_option"
  | "queue_full"
  | "closed"
  | "token_expired"
  | "already_subscribed"
  | "unsubscribed"
  | "handler_error"
  | "no_websocket"
  | "no_eventsource"
  | "token_error"
  | "not_connected"
  | "connection_lost"
  | "no_fetch";

/**
 * Every wire error code of protocol version 1 (PROTOCOL.md "Error codes") and whether retrying can help. The
 * server says so itself on each `err` frame (`temporary`); this table is the fallback for servers that do
 * not, and a code not in it (one added later) counts as temporary.
 */
export const WIRE_CODES = {
  bad_json: { temporary: false },
  unknown_op: { temporary: false },
  bad_request: { temporary: false },
  bad_channel: { temporary: false },
  too_many_subscriptions: { temporary: false },
  already_subscribed: { temporary: false },
  not_subscribed: { temporary: false },
  payload_too_large: { temporary: false },
  broker_unavailable: { temporary: true },
  broker_error: { temporary: true },
  durable_conflict: { temporary: false },
  unsupported_by_broker: { temporary: false },
  unauthorized: { temporary: false },
  forbidden: { temporary: false },
  rate_limited: { temporary: true },
  unknown_seq: { temporary: false },
  shutting_down: { temporary: true },
  internal: { temporary: true },
  hook_unavailable: { temporary: true },
  presence_full: { temporary: true },
  slow_consumer: { temporary: true },
  too_many_durables: { temporary: false },
  durables_full: { temporary: true },
  disconnected: { temporary: false },
  unsubscribed: { temporary: false },
  feature_disabled: { temporary: false },
  rpc_error: { temporary: false },
  rpc_unavailable: { temporary: false },
  subscription_expired: { temporary: true },
  not_found: { temporary: false },
  method_not_allowed: { temporary: false },
  unsupported_media_type: { temporary: false },
  stats_unavailable: { temporary: true },
  metrics_unavailable: { temporary: true },
} as const satisfies Record<string, { temporary: boolean }>;
export type WireErrorCode = keyof typeof WIRE_CODES;

/** Whether retrying can help with `code` when nothing says otherwise: unknown codes are temporary. */
export function isTemporary(code: string): boolean {
  return (WIRE_CODES as Record<string, { temporary: boolean }>)[code]?.temporary ?? true;
}

/** Client-side failures (`ClientErrorCode`) and server `err` replies (the wire codes of PROTOCOL.md). */
export class GatewayError extends Error {
  override readonly name = "GatewayError";
  /** Whether retrying can help: the server says so on each `err` frame (`temporary`). */
  readonly temporary: boolean;
  /** `rpc_error` only: the application backend's own code for the error, when it gave one. */
  declare readonly appCode?: string;
  constructor(
    readonly code: ClientErrorCode | WireErrorCode | (string & {}),
    message: string,
    options?: { cause?: unknown; temporary?: boolean; appCode?: string },
  ) {
    super(message, options);
    this.temporary = options?.temporary ?? isTemporary(code);
    if (options?.appCode !== undefined) this.appCode = options.appCode;
  }
}

/** The error an `err` frame (or an HTTP error body turned into one) stands for. */
export function wireError(f: Record<string, unknown>): GatewayError {
  const code = typeof f.code === "string" ? f.code : "internal";
  return new GatewayError(code, typeof f.message === "string" ? f.message : JSON.stringify(f), {
    ...(typeof f.temporary === "boolean" ? { temporary: f.temporary } : {}),
    ...(typeof f.appCode === "string" ? { appCode: f.appCode } : {}),
  });
}

/** A thrown value's message, for error texts. */
export const messageOf = (e: unknown): string => (e as Error)?.message ?? String(e);
