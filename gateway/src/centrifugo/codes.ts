import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";

/**
 * The error codes of Centrifugo's server API, as its clients (`cent`, `cent.js`, gocent, phpcent) read them in
 * `{"error":{"code","message"}}`. Every error of this door is one of these; the message says what happened here.
 */
export const ApiCode = {
  Internal: 100,
  Unauthorized: 101,
  UnknownChannel: 102,
  PermissionDenied: 103,
  MethodNotFound: 104,
  LimitExceeded: 106,
  BadRequest: 107,
  NotAvailable: 108,
  TooManyRequests: 111,
  UnrecoverablePosition: 112,
} as const;
export type ApiCode = (typeof ApiCode)[keyof typeof ApiCode];

export type ApiError = { code: ApiCode; message: string };
/** One method's answer. */
export type Reply = { result: Record<string, unknown> } | { error: ApiError };

export const fail = (code: ApiCode, message: string): { error: ApiError } => ({ error: { code, message } });
export const badRequest = (message: string): { error: ApiError } => fail(ApiCode.BadRequest, message);

/** The Centrifugo code of each of this gateway's wire errors. */
const OF: { readonly [C in ErrorCode]?: ApiCode } = {
  [ErrorCode.BadJson]: ApiCode.BadRequest,
  [ErrorCode.BadRequest]: ApiCode.BadRequest,
  // A channel the chain refuses as a channel (a pattern that spans namespaces): Centrifugo's word for a name it cannot route.
  [ErrorCode.BadChannel]: ApiCode.UnknownChannel,
  [ErrorCode.PayloadTooLarge]: ApiCode.LimitExceeded,
  [ErrorCode.PresenceFull]: ApiCode.LimitExceeded,
  [ErrorCode.Unauthorized]: ApiCode.Unauthorized,
  [ErrorCode.Forbidden]: ApiCode.PermissionDenied,
  [ErrorCode.RateLimited]: ApiCode.TooManyRequests,
  [ErrorCode.FeatureDisabled]: ApiCode.NotAvailable,
  [ErrorCode.UnsupportedByBroker]: ApiCode.NotAvailable,
  [ErrorCode.NotFound]: ApiCode.MethodNotFound,
};

/** A refusal or failure of this gateway (a GatewayError, a chain refusal, an item's error) as Centrifugo's. */
export function apiErrorOf(e: { code: string; message: string }): ApiError {
  const code = OF[e.code as ErrorCode] ?? ApiCode.Internal;
  // Temporary failures (broker or hook unavailable) are Centrifugo's internal error: its clients retry those.
  return { code, message: code === ApiCode.Internal && e.code !== ErrorCode.Internal ? `${e.code}: ${e.message}` : e.message };
}

/** What a thrown error answers: a GatewayError's own code, anything else (a bug) internal. */
export function replyOfThrown(e: unknown): { error: ApiError } {
  if (e instanceof GatewayError) return { error: apiErrorOf(e) };
  return fail(ApiCode.Internal, "internal error");
}

/** The HTTP status of an error in transport error mode (`X-Centrifugo-Error-Mode: transport`), as Centrifugo maps them. */
export function transportStatus(code: ApiCode): number {
  switch (code) {
    case ApiCode.UnknownChannel:
    case ApiCode.MethodNotFound:
      return 404;
    case ApiCode.BadRequest:
    case ApiCode.NotAvailable:
      return 400;
    case ApiCode.Unauthorized:
      return 401;
    case ApiCode.PermissionDenied:
      return 403;
    case ApiCode.LimitExceeded:
      return 413;
    case ApiCode.TooManyRequests:
      return 429;
    case ApiCode.UnrecoverablePosition:
      return 416;
    case ApiCode.Internal:
      return 500;
  }
}
