import type { HttpRequest, HttpResponse } from "../uws.js";
import { refusal, type Access, type AccessControl, type Identity, type Knock, type Refusal, type SubscriptionGrant } from "./access.js";
import { bearerOf } from "./authenticator.js";
import { ErrorCode } from "../protocol/codes.js";

/**
 * What the authorization chain needs of an HTTP request (SSE, history, presence list, publish), read
 * synchronously: uWS requests die when the handler returns. `Authorization: Bearer`, `X-Api-Key` (or an API
 * key as the bearer), and the HOOK_HEADERS for the connect hook. The client's address is read only when a
 * hook will be sent it (or given, when the door has it already): a publish without hooks does not pay for it.
 */
export function readKnock(access: AccessControl, req: HttpRequest, res: HttpResponse, transport: "sse" | "http", ip?: string): Knock {
  const authorization = req.getHeader("authorization");
  const apiKey = req.getHeader("x-api-key");
  const token = authorization ? (bearerOf(authorization) ?? authorization) : undefined;
  ip ??= access.hooks ? Buffer.from(res.getRemoteAddressAsText()).toString() : "";
  return { transport, ip, headers: hookHeaders(access, req), ...(token ? { token } : {}), ...(apiKey ? { apiKey } : {}) };
}

/**
 * The same for a request of node:http (the primary's admin listener): headers are already read. An API key in
 * the URL is never looked for.
 */
export function readNodeKnock(access: AccessControl, headers: Readonly<Record<string, string | string[] | undefined>>, ip: string): Knock {
  const one = (h: string): string => {
    const v = headers[h];
    return Array.isArray(v) ? (v[0] ?? "") : (v ?? "");
  };
  const authorization = one("authorization");
  const apiKey = one("x-api-key");
  const token = authorization ? (bearerOf(authorization) ?? authorization) : undefined;
  const hooked: Record<string, string> = {};
  if (access.hooks?.connectEnabled) for (const h of access.hooks.headerNames) if (one(h)) hooked[h] = one(h);
  return { transport: "http", ip, headers: hooked, ...(token ? { token } : {}), ...(apiKey ? { apiKey } : {}) };
}

/** Headers a proxy adds: a request that carries one came through a proxy, whose address is not the client's. */
export const FORWARDED_HEADERS = ["forwarded", "x-forwarded-for", "x-real-ip"] as const;

/**
 * Whether a request came from this host: a loopback address (127.0.0.0/8, ::1, and both as uWS and node
 * write them), and no proxy header. With authentication off this is what lets a request into the control plane.
 */
export function fromThisHost(ip: string, header: (name: string) => string): boolean {
  if (FORWARDED_HEADERS.some((h) => header(h) !== "")) return false;
  const lower = ip.toLowerCase();
  if (lower.startsWith("0000:0000:0000:0000:0000:ffff:7f")) return true; // 127.x.x.x, IPv4-mapped as uWS writes it
  const a = lower.replace(/^::ffff:/, "");
  return /^127\.\d+\.\d+\.\d+$/.test(a) || a === "::1" || a === "0000:0000:0000:0000:0000:0000:0000:0001";
}

/** The request headers named in HOOK_HEADERS (lower case, absent ones left out); none without a connect hook. */
export function hookHeaders(access: AccessControl, req: HttpRequest): Record<string, string> {
  const out: Record<string, string> = {};
  if (!access.hooks?.connectEnabled) return out;
  for (const h of access.hooks.headerNames) {
    const v = req.getHeader(h);
    if (v) out[h] = v;
  }
  return out;
}

/**
 * The whole chain for one HTTP request and one channel: the request's identity, or what to answer (401 no or
 * bad credentials, 403 no right or the application said no, 503 a hook did not answer). Every HTTP door that
 * reads or writes a channel calls this and nothing else.
 */
export async function authorizeRequest(
  access: AccessControl,
  k: Knock,
  a: Access,
): Promise<{ identity: Identity; grant?: SubscriptionGrant } | { refused: Refusal }> {
  try {
    const identity = await access.identify(k);
    const { token } = await access.admit(identity, a);
    return token ? { identity, grant: token } : { identity };
  } catch (e) {
    return { refused: refused(access, e) };
  }
}

/** The first half of the chain alone (token, connect hook) for a request that names its channels later: a batch. */
export async function identifyRequest(access: AccessControl, k: Knock): Promise<{ identity: Identity } | { refused: Refusal }> {
  try {
    return { identity: await access.identify(k) };
  } catch (e) {
    return { refused: refused(access, e) };
  }
}

function refused(access: AccessControl, e: unknown): Refusal {
  const r = refusal(e);
  if (r.code === ErrorCode.Internal) access.log?.error({ err: e }, "authorization failed unexpectedly");
  return r;
}
