import { WIRE_ERRORS } from "../../errors.js";
import { CloseCode, ErrorCode } from "../codes.js";

/**
 * The error and disconnect codes of the Centrifuge client protocol (v2), and the one mapping from this
 * gateway's wire errors and close codes onto them. docs/centrifugo.md has the table.
 *
 * Error codes (a reply's `error.code`) are Centrifugo's 100–112. Disconnect codes (a WebSocket close code, or
 * a `disconnect` push) tell the SDKs what to do: 3000–3499 and 4000–4499 reconnect, 3500–3999 and 4500–4999
 * do not.
 */
export const ClientError = {
  Internal: 100,
  Unauthorized: 101,
  UnknownChannel: 102,
  PermissionDenied: 103,
  MethodNotFound: 104,
  AlreadySubscribed: 105,
  LimitExceeded: 106,
  BadRequest: 107,
  NotAvailable: 108,
  TokenExpired: 109,
  Expired: 110,
  TooManyRequests: 111,
  UnrecoverablePosition: 112,
} as const;
export type ClientError = (typeof ClientError)[keyof typeof ClientError];

export const Disconnect = {
  Shutdown: 3001,
  ServerError: 3004,
  Expired: 3005,
  SubExpired: 3006,
  Slow: 3008,
  InsufficientState: 3010,
  ForceReconnect: 3011,
  NoPong: 3012,
  TooManyRequests: 3013,
  InvalidToken: 3500,
  BadRequest: 3501,
  Stale: 3502,
  ForceNoReconnect: 3503,
  ConnectionLimit: 3504,
  PermissionDenied: 3507,
  NotAvailable: 3508,
} as const;
export type Disconnect = (typeof Disconnect)[keyof typeof Disconnect];

/**
 * Unsubscribe push codes: below 2500 the subscription ends (the SDK does not subscribe again); from 2500 the
 * SDK subscribes again (with a new subscription token when the old one expired).
 */
export const Unsubscribe = {
  /** The server (an operator, the control plane) ended it. */
  Server: 2000,
  /** Its subscription token expired: the SDK subscribes again, asking for a new token. */
  Expired: 2501,
} as const;

/** The unsubscribe push of a subscription the gateway ended: its code from the gateway's reason (`code`), and the reason. */
export function unsubscribeOf(code: ErrorCode | undefined, reason: string): { code: number; reason: string } {
  return { code: code === ErrorCode.SubscriptionExpired ? Unsubscribe.Expired : Unsubscribe.Server, reason };
}

/** A disconnect code's advice: reconnect (3000–3499, 4000–4499) or stay away. */
export const reconnects = (code: number): boolean => (code >= 3000 && code < 3500) || (code >= 4000 && code < 4500);

/** The client error code of each of this gateway's wire errors (every code has one: the table in docs/centrifugo.md). */
export const CLIENT_ERROR_OF: { readonly [C in ErrorCode]: ClientError } = {
  [ErrorCode.BadJson]: ClientError.BadRequest,
  [ErrorCode.UnknownOp]: ClientError.MethodNotFound,
  [ErrorCode.BadRequest]: ClientError.BadRequest,
  // A name the chain cannot route (a pattern spanning namespaces): Centrifugo's word for a channel it does not know.
  [ErrorCode.BadChannel]: ClientError.UnknownChannel,
  [ErrorCode.TooManySubscriptions]: ClientError.LimitExceeded,
  [ErrorCode.AlreadySubscribed]: ClientError.AlreadySubscribed,
  [ErrorCode.NotSubscribed]: ClientError.BadRequest,
  [ErrorCode.PayloadTooLarge]: ClientError.LimitExceeded,
  [ErrorCode.BrokerUnavailable]: ClientError.Internal,
  [ErrorCode.BrokerError]: ClientError.Internal,
  [ErrorCode.DurableConflict]: ClientError.BadRequest,
  [ErrorCode.UnsupportedByBroker]: ClientError.NotAvailable,
  [ErrorCode.Unauthorized]: ClientError.Unauthorized,
  [ErrorCode.Forbidden]: ClientError.PermissionDenied,
  [ErrorCode.RateLimited]: ClientError.TooManyRequests,
  [ErrorCode.UnknownSeq]: ClientError.BadRequest,
  [ErrorCode.ShuttingDown]: ClientError.Internal,
  [ErrorCode.Internal]: ClientError.Internal,
  [ErrorCode.HookUnavailable]: ClientError.Internal,
  [ErrorCode.PresenceFull]: ClientError.LimitExceeded,
  [ErrorCode.SlowConsumer]: ClientError.Internal,
  [ErrorCode.TooManyDurables]: ClientError.LimitExceeded,
  [ErrorCode.DurablesFull]: ClientError.LimitExceeded,
  [ErrorCode.Disconnected]: ClientError.PermissionDenied,
  [ErrorCode.Unsubscribed]: ClientError.PermissionDenied,
  [ErrorCode.FeatureDisabled]: ClientError.NotAvailable,
  // The backend's own refusal: its message and `temporary` are passed on; Centrifugo's proxies answer these with their own code.
  [ErrorCode.RpcError]: ClientError.BadRequest,
  [ErrorCode.RpcUnavailable]: ClientError.MethodNotFound,
  [ErrorCode.NotFound]: ClientError.MethodNotFound,
  [ErrorCode.MethodNotAllowed]: ClientError.MethodNotFound,
  [ErrorCode.UnsupportedMediaType]: ClientError.BadRequest,
  [ErrorCode.StatsUnavailable]: ClientError.Internal,
  [ErrorCode.MetricsUnavailable]: ClientError.Internal,
  // A subscription token (PROTOCOL.md `sub` `token`) that expired: the SDKs ask for a new one on 109.
  [ErrorCode.SubscriptionExpired]: ClientError.TokenExpired,
};

/** A reply's `error`: the client code, the gateway's code and message, and whether retrying helps. */
export type ClientErrorOut = { code: ClientError; message: string; temporary?: true };

export function clientErrorOf(code: ErrorCode, message: string, temporary = WIRE_ERRORS[code].temporary): ClientErrorOut {
  // A temporary failure is Centrifugo's internal error unless the code says more; the SDKs retry those.
  return { code: CLIENT_ERROR_OF[code], message: `${code}: ${message}`, ...(temporary ? { temporary: true } : {}) };
}

/**
 * The disconnect code of each close the gateway starts (ws/, auth/ close sockets with these whatever their door).
 * A code already in the Centrifuge ranges is sent as it is (a hook's `disconnect` answer chose it).
 */
export function disconnectOf(code: number): number {
  switch (code) {
    case CloseCode.GoingAway:
      return Disconnect.Shutdown;
    case CloseCode.MessageTooBig:
      return CloseCode.MessageTooBig; // the SDKs read 1009 as "message size limit" and stay away
    case CloseCode.InternalError:
      return Disconnect.ServerError;
    case CloseCode.StreamRecreated:
      return Disconnect.InsufficientState;
    case CloseCode.TokenExpired:
      return Disconnect.Expired;
    case CloseCode.SlowConsumer:
      return Disconnect.Slow;
    case CloseCode.RateLimited:
      return Disconnect.TooManyRequests;
    case CloseCode.DisconnectedReconnect:
      return Disconnect.ForceReconnect;
    case CloseCode.DisconnectedFinal:
      return Disconnect.ForceNoReconnect;
    default:
      return code >= 3000 && code < 5000 ? code : Disconnect.ServerError;
  }
}

/**
 * What an error without a request to answer becomes (a catch-up that failed, a refresh that revoked a
 * subscription, a frame-rate warning): the protocol has no such reply, so the connection is told to go and
 * come back, and its SDK recovers every subscription from where it was. Temporary errors: insufficient state
 * (reconnect and recover); the frame rate: too many requests; anything else: force reconnect.
 */
export function disconnectForUnsolicited(code: ErrorCode, temporary: boolean): number {
  if (code === ErrorCode.RateLimited) return Disconnect.TooManyRequests;
  return temporary ? Disconnect.InsufficientState : Disconnect.ForceReconnect;
}
