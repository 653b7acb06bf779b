/**
 * Every wire error code and WebSocket close code the gateway uses. gateway/PROTOCOL.md documents each one;
 * codes are stable: new ones may be added, existing ones never change meaning.
 */
export const ErrorCode = {
  /** The frame is not valid JSON or not a JSON object. */
  BadJson: "bad_json",
  /** `op` is missing or not one the server knows. */
  UnknownOp: "unknown_op",
  /** A field is missing or has the wrong type or range. */
  BadRequest: "bad_request",
  /** The channel (or pattern) is not valid. */
  BadChannel: "bad_channel",
  /** The connection already holds the maximum number of subscriptions. */
  TooManySubscriptions: "too_many_subscriptions",
  /** `sub` for a channel pattern this connection already subscribes to. */
  AlreadySubscribed: "already_subscribed",
  /** `unsub` for a pattern this connection does not subscribe to. */
  NotSubscribed: "not_subscribed",
  /** The payload of a publish is larger than the configured maximum. */
  PayloadTooLarge: "payload_too_large",
  /** The broker is not reachable right now; retry later. */
  BrokerUnavailable: "broker_unavailable",
  /** The broker refused or failed the operation. */
  BrokerError: "broker_error",
  /** The durable name is already bound to another channel (of this user): use another name. */
  DurableConflict: "durable_conflict",
  /** The selected broker cannot do this (e.g. replay on Redis pub/sub). */
  UnsupportedByBroker: "unsupported_by_broker",
  /** HTTP only (401): no credentials, or a token/API key that is invalid or expired. */
  Unauthorized: "unauthorized",
  /** The client may not do this (channel permissions, another user's durable, missing pub right). */
  Forbidden: "forbidden",
  /**
   * The connection sent frames faster than its allowance; the next breach closes it with 4029. Also an `rpc`
   * over the connection's RPC_MAX_IN_FLIGHT unanswered calls (no close for that: wait for an answer).
   */
  RateLimited: "rate_limited",
  /** ack/nak/term for a sequence this connection does not hold unacknowledged. */
  UnknownSeq: "unknown_seq",
  /** The server is shutting down. */
  ShuttingDown: "shutting_down",
  /** An unexpected server error; the connection stays usable. */
  Internal: "internal",
  /** A connect, subscribe, publish or RPC hook of the application backend did not answer (in time): refused; retry later. */
  HookUnavailable: "hook_unavailable",
  /** The channel has as many presence members as allowed (PRESENCE_MAX_MEMBERS); retry when some leave. */
  PresenceFull: "presence_full",
  /**
   * A subscription's catch-up ended because the client read too slowly (past CATCHUP_DEADLINE, or its held
   * live messages past CATCHUP_BUFFER_MESSAGES/BYTES while its socket was full); subscribe again from the
   * last seq received: nothing is lost.
   */
  SlowConsumer: "slow_consumer",
  /** The user has as many durable names as allowed (DURABLE_MAX_PER_USER): reuse one, or wait for an unused one to expire. */
  TooManyDurables: "too_many_durables",
  /** The stream holds as many consumers as it allows (STREAM_MAX_CONSUMERS): retry when unused durables expire. */
  DurablesFull: "durables_full",
  /**
   * The server ended the connection or stream on an operator's request (`POST /v1/server/disconnect`);
   * `temporary` says whether it may reconnect. SSE only: a WebSocket gets a close code (4012, 4403).
   */
  Disconnected: "disconnected",
  /** The server ended a subscription on an operator's request (`POST /v1/server/unsubscribe`). */
  Unsubscribed: "unsubscribed",
  /**
   * The channel's namespace has this feature switched off (NAMESPACES_FILE: history, resume, presence,
   * publish, sse, durables, lastValues) or its stream keeps no per-message TTL: asking again will not help.
   */
  FeatureDisabled: "feature_disabled",
  /**
   * The application backend answered an `rpc` with an error: its `message`, its own `appCode` (any string
   * it chose) and its `temporary` (false unless it said so) are passed on as they were.
   */
  RpcError: "rpc_error",
  /** This gateway answers no `rpc`: it has no RPC_HOOK_URL. Asking again will not help. */
  RpcUnavailable: "rpc_unavailable",
  /**
   * A subscription token expired: at `sub` (or an SSE open), or the subscription it granted ended at its
   * `exp` with no `sub_refresh` (an `unsub` frame with this `code`). Get a new token and subscribe again.
   */
  SubscriptionExpired: "subscription_expired",
  /** HTTP only (404): no route, or no control operation, at this path. */
  NotFound: "not_found",
  /** HTTP only (405): the path takes another method (the message says which). */
  MethodNotAllowed: "method_not_allowed",
  /**
   * HTTP only (415): a request that changes state (publish, batch, the control plane) without
   * `Content-Type: application/json` (a batch may be `application/x-ndjson`). A browser page may send a form
   * or `text/plain` anywhere without asking; it must ask (a CORS preflight) before it sends JSON.
   */
  UnsupportedMediaType: "unsupported_media_type",
  /** HTTP only (503): `GET /v1/stats` could not be made (the primary did not answer its worker in time). */
  StatsUnavailable: "stats_unavailable",
  /** HTTP only (503): `GET /metrics` could not be gathered from the workers. */
  MetricsUnavailable: "metrics_unavailable",
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** WebSocket close codes. 1000–1015 are RFC 6455; 4000–4999 are the gateway's own. */
export const CloseCode = {
  /** Normal close requested by the client. */
  Normal: 1000,
  /** Server going away (drain, restart, deploy): reconnect, resume from the last seq you saw. */
  GoingAway: 1001,
  /** A frame larger than the maximum payload (uWS closes with this code). */
  MessageTooBig: 1009,
  /** Unexpected server condition. */
  InternalError: 1011,
  /** The stream was deleted and created again: reconnect and resume with your last seq and its epoch. */
  StreamRecreated: 1012,
  /** The token expired and no `refresh` arrived in time; reconnect with a fresh token. */
  TokenExpired: 4001,
  /** The socket stayed over its backpressure limit for too long; reconnect and resume. */
  SlowConsumer: 4008,
  /** The connection kept sending frames over its rate limit after an `rate_limited` error. */
  RateLimited: 4029,
  /** An operator disconnected the user (`POST /v1/server/disconnect` with reconnect:true): reconnect and resume. */
  DisconnectedReconnect: 4012,
  /** An operator disconnected the user (`POST /v1/server/disconnect` with reconnect:false): do not reconnect. */
  DisconnectedFinal: 4403,
} as const;
export type CloseCode = (typeof CloseCode)[keyof typeof CloseCode];
