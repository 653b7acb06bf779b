import { createHash, timingSafeEqual } from "node:crypto";
import { errors as joseErrors, jwtVerify, type JWTPayload } from "jose";
import type { AuthSection } from "../config/sections/index.js";
import { AuthError } from "./errors.js";
import { loadKeyMaterial, type KeyMaterial } from "./keys.js";
import { parseChannelsClaim, parseRpcClaim } from "./permissions.js";
import { loadApiKeys } from "./api-keys.js";
import { ANONYMOUS, apiKeyPrincipal, type Principal } from "./principal.js";

const MAX_TOKEN_LENGTH = 8_192;
const MAX_USER_LENGTH = 256;

/** Credentials of an HTTP request, read synchronously from the uWS request. */
export type HttpCredentials = { bearer?: string; apiKey?: string };

/**
 * Turns credentials into a Principal: verifies JWTs with the key material loaded once at construction,
 * and compares API keys in constant time. With authentication off everything is the allow-all ANONYMOUS.
 */
export class Authenticator {
  readonly enabled: boolean;
  private readonly keys: KeyMaterial | undefined;
  /** Each configured API key's hash, and the principal it stands for (its scopes). */
  private readonly apiKeys: { hash: Buffer; principal: Principal }[];

  constructor(private readonly config: AuthSection) {
    this.keys = loadKeyMaterial(config);
    this.enabled = this.keys !== undefined;
    this.apiKeys = loadApiKeys(config).map((k) => ({ hash: sha256(k.key), principal: apiKeyPrincipal(k.scopes) }));
  }

  /** Algorithms accepted (for the startup log). */
  get algorithms(): string[] {
    return this.keys?.algorithms ?? [];
  }

  /** A WebSocket's token: ANONYMOUS when auth is off; rejects with AuthError when missing or invalid. */
  async authenticate(token: string | undefined): Promise<Principal> {
    if (!this.keys) return ANONYMOUS;
    if (token === undefined || token === "")
      throw new AuthError("missing", "a token is required (Authorization: Bearer, Sec-WebSocket-Protocol bearer.<token>, or ?token=)");
    return this.verify(token);
  }

  /** Verifies a JWT and reads its claims. */
  async verify(token: string): Promise<Principal> {
    const keys = this.keys;
    if (!keys) return ANONYMOUS;
    if (token.length > MAX_TOKEN_LENGTH) throw new AuthError("invalid", `token is longer than ${MAX_TOKEN_LENGTH} characters`);
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys.key as Uint8Array, {
        algorithms: keys.algorithms,
        issuer: this.config.jwtIssuer || undefined,
        audience: this.config.jwtAudience || undefined,
        clockTolerance: this.config.jwtClockToleranceSec,
        requiredClaims: ["sub", "exp"],
      }));
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new AuthError("expired", "token has expired", { cause: e });
      if (e instanceof joseErrors.JWTClaimValidationFailed) throw new AuthError("claims", `token rejected: ${e.message}`, { cause: e });
      throw new AuthError("invalid", `token rejected: ${e instanceof joseErrors.JOSEError ? e.message : "malformed token"}`, { cause: e });
    }
    if (typeof payload.sub !== "string" || payload.sub.length === 0 || payload.sub.length > MAX_USER_LENGTH)
      throw new AuthError("claims", `token rejected: sub must be a string of 1-${MAX_USER_LENGTH} characters`);
    const perms = parseChannelsClaim((payload as Record<string, unknown>).channels);
    if (typeof perms === "string") throw new AuthError("claims", `token rejected: ${perms}`);
    const rpc = parseRpcClaim((payload as Record<string, unknown>).rpc);
    if (typeof rpc === "string") throw new AuthError("claims", `token rejected: ${rpc}`);
    return Object.freeze({ user: payload.sub, perms: rpc.length ? Object.freeze({ ...perms, rpc }) : perms, exp: payload.exp });
  }

  /**
   * An HTTP request: an API key (X-Api-Key, or as the bearer) or a JWT bearer; ANONYMOUS when auth is off.
   * `urlToken`: the door also reads a JWT from `?token=` (SSE), which the refusal of none then names.
   */
  async authenticateHttp(c: HttpCredentials, urlToken = false): Promise<Principal> {
    if (!this.enabled) return ANONYMOUS;
    if (!c.bearer && !c.apiKey)
      throw new AuthError(
        "missing",
        urlToken
          ? "credentials are required: Authorization: Bearer <token>, ?token=<token>, or an API key in the X-Api-Key header (never in the URL)"
          : "credentials are required: Authorization: Bearer <token>, or an API key in the X-Api-Key header (this request's URL is not read for them)",
      );
    if (c.apiKey !== undefined && c.apiKey !== "") {
      const key = this.apiKeyOf(c.apiKey);
      if (key) return key;
      throw new AuthError("invalid", "unknown API key");
    }
    return (c.bearer ? this.apiKeyOf(c.bearer) : undefined) ?? this.authenticate(c.bearer);
  }

  /** Whether `candidate` is one of the configured API keys (compared in constant time). */
  isApiKey(candidate: string): boolean {
    return this.apiKeyOf(candidate) !== undefined;
  }

  /** The principal of the configured API key `candidate` is (every key compared, in constant time). */
  private apiKeyOf(candidate: string): Principal | undefined {
    const h = sha256(candidate);
    let found: Principal | undefined;
    for (const k of this.apiKeys) if (timingSafeEqual(h, k.hash)) found = k.principal;
    return found;
  }
}

const sha256 = (s: string): Buffer => createHash("sha256").update(s).digest();

/** The token of an `Authorization: Bearer <token>` header value, if it is one. */
export function bearerOf(authorization: string): string | undefined {
  const m = /^Bearer[ \t]+(\S+)\s*$/i.exec(authorization);
  return m?.[1];
}
