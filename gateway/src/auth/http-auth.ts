import { ErrorCode } from "../protocol/codes.js";
import type { HttpRequest } from "../uws.js";
import { bearerOf, type Authenticator, type HttpCredentials } from "./authenticator.js";
import { AuthError } from "./errors.js";
import { canPublish, canSubscribe } from "./permissions.js";

/** An HTTP refusal: 401 (no or bad credentials) or 403 (no right on this channel). */
export type HttpDenial = { status: 401 | 403; body: { error: string; message: string } };

/** Reads the credentials of a request (synchronously: uWS requests die after the handler returns). */
export function readCredentials(req: HttpRequest): HttpCredentials {
  const authorization = req.getHeader("authorization");
  const apiKey = req.getHeader("x-api-key");
  return { bearer: authorization ? (bearerOf(authorization) ?? authorization) : undefined, apiKey: apiKey || undefined };
}

/**
 * Checks an HTTP request's right to `pub` (publish) or `sub` (read history) on `channel`. With
 * authentication off everything passes; API keys may do both on every channel.
 */
export async function authorizeHttp(
  auth: Authenticator,
  creds: HttpCredentials,
  right: "pub" | "sub",
  channel: string | undefined,
): Promise<HttpDenial | undefined> {
  if (!auth.enabled) return undefined;
  let perms;
  try {
    perms = (await auth.authenticateHttp(creds)).perms;
  } catch (e) {
    if (!(e instanceof AuthError)) throw e;
    return { status: 401, body: { error: ErrorCode.Unauthorized, message: e.message } };
  }
  if (channel === undefined) return undefined;
  const ok = right === "pub" ? canPublish(perms, channel) : canSubscribe(perms, channel);
  return ok
    ? undefined
    : { status: 403, body: { error: ErrorCode.Forbidden, message: `no permission to ${right === "pub" ? "publish to" : "read"} ${channel}` } };
}
