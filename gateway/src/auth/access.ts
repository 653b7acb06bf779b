import { toGatewayChannel } from "../protocol/centrifugo-channels.js";
import { GatewayError } from "../errors.js";
import { ErrorCode } from "../protocol/codes.js";
import { isWildcard } from "../protocol/channel.js";
import type { Authenticator, SubscriptionClaims } from "./authenticator.js";
import { AuthError } from "./errors.js";
import type { Logger } from "../log.js";
import { claimsOf, type HookGrant, type Hooks, type RefreshSubject, type SubscribeGrant } from "./hooks.js";
import { canCall, canPublish, canSubscribe } from "./permissions.js";
import { ANONYMOUS, hasScope, type Principal } from "./principal.js";
import type { NamespacesSection } from "../namespaces/namespace.js";
import { spansMessage } from "../namespaces/routing.js";
import { FEATURE_DOORS, type Feature } from "../namespaces/spec.js";
import type { Publisher } from "../limits/publish-limits.js";
import type { PublishedBy } from "../publish/service.js";

/** The door a request came in by; the connect hook is told which (`transport`). */
export type Transport = "websocket" | "sse" | "http";

/** The connection a request came by, as a Centrifugo-format hook names it: its client id ("" for HTTP), door and codec. */
export type Conn = Readonly<{ client: string; transport: Transport; protocol: string }>;

/**
 * Who is asking, as the chain established it: once per WebSocket (at the upgrade, and again at each
 * `refresh`) and once per HTTP request (SSE, history, presence list, publish).
 */
export type Identity = Readonly<{
  principal: Principal;
  ip: string;
  /** What the connect hook granted: re-applied to a refreshed token's claims. */
  grant?: HookGrant;
  /** The connect hook's `info`, passed back to the subscribe hook. */
  info?: unknown;
  /** A verified token, or the connect hook's `user`, names the user. Hook answers are cached only then. */
  identified: boolean;
  /** A configured API key (a trusted backend): every channel within its scopes, and the hooks are not asked. */
  trusted: boolean;
  /** The connection (a WebSocket's client id and codec); absent: one HTTP request. */
  conn?: Conn;
}>;

type Writable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * The identity with its connection, when there is one, added as a property: a spread (`...conn`) at the end of
 * the literal gave every WebSocket's identity a hidden class of its own (a heap snapshot of 5,000 sockets held
 * 4,987 of them, about 400 bytes each); an added property takes the same transition every time.
 */
function withConn(id: Writable<Identity>, conn: Conn | undefined): Identity {
  if (conn) id.conn = conn;
  return id;
}

/** Authentication off, no connect hook: nobody is named, everything is allowed. */
export const anonymousIdentity = (ip: string, conn?: Conn): Identity => withConn({ principal: ANONYMOUS, ip, identified: false, trusted: false }, conn);

/** The user a per-user allowance (READ_RATE_PER_USER) counts against: a named user, not an API key or `anon`. */
export const readerOf = (id: Identity): string | undefined => (id.identified && !id.trusted ? id.principal.user : undefined);

/** Who an HTTP publish counts against (PUBLISH_RATE, PUBLISH_RATE_PER_KEY): the API key, a named user, or the client's address. */
export const publisherOf = (id: Identity, k: Knock): Publisher =>
  id.trusted ? { kind: "key", id: k.apiKey ?? k.token ?? "" } : id.identified ? { kind: "user", id: id.principal.user } : { kind: "ip", id: k.ip };

/** The publisher as the publish hook is told: the identity's named user, address, connect info; `client` on a WebSocket. */
export const publishedBy = (id: Identity, client?: string): PublishedBy => ({
  user: id.identified ? id.principal.user : null,
  ...(client !== undefined ? { client } : {}),
  ...(id.conn ? { protocol: id.conn.protocol } : {}),
  ip: id.ip,
  ...(id.info !== undefined ? { info: id.info } : {}),
  ...(id.principal.meta !== undefined ? { meta: id.principal.meta } : {}),
  trusted: id.trusted,
});

/** What a valid subscription token granted: the read lasts until `exp` (unix seconds); its `info` claim. */
export type SubscriptionGrant = { exp: number; info?: unknown };

/** What admitting a request granted besides allowing it (AccessControl.admit): the subscribe hook's, or a subscription token's. */
export type ReadGrant = { hook?: SubscribeGrant; token?: SubscriptionGrant };

/** What one request wants on one channel. Reads take a pattern; writes a concrete channel. */
export type Access =
  | {
      right: "sub";
      channel: string;
      /** The durable name of an acknowledged subscription (sent to the subscribe hook). */
      durable?: string;
      /** A server-side subscription (`channels.auto`) being taken over: the token or connect hook granted it. */
      serverSide?: boolean;
      /**
       * A subscription the server adds to the connection (the control plane's `subscribe`): the server's grant
       * stands in place of the connection's permission, and the subscribe hook is not asked. The namespace
       * switches still apply.
       */
      byServer?: boolean;
      /**
       * A subscription token for `channel` (`sub`'s `token`, SSE's `?sub_token=`): when valid it grants the
       * read in place of the connection's permission, and the subscribe hook is not asked (the backend decided
       * when it signed it). The namespace switches still apply.
       */
      token?: string;
      /**
       * The features of its namespace the request uses (a start from a seq: `resume`; SSE: `sse`; …): one
       * switched off refuses it with `feature_disabled`. Plain live delivery uses none.
       */
      uses?: readonly Feature[];
    }
  /**
   * A publish; `ttl` (`Nats-TTL`'s `<seconds>s`) when it carries a per-message TTL: its namespace's stream
   * must allow them, and keep messages at least that long.
   */
  | { right: "pub"; channel: string; ttl?: string | undefined }
  /**
   * The server's control plane (`/v1/server/…`: disconnect, unsubscribe, occupancy, broadcast, users): an
   * API key with the `admin` scope. With authentication off (no key can be configured) a request from this
   * host (`local`: loopback, not through a proxy), unless a connect hook is set: the hook says who an
   * application user is, never who operates the gateway.
   */
  | { right: "admin"; local: boolean }
  /**
   * A call of an RPC method (WebSocket `rpc`): the connection's `rpc` permissions (the token's claim, the
   * connect hook's grant; everything with authentication off). API keys call none: they are the backend.
   */
  | { right: "rpc"; method: string };

/** The credentials of one upgrade or request, read before the first await (uWS requests die then). */
export type Knock = {
  transport: Transport;
  ip: string;
  /** The JWT (WebSocket: from the offer; HTTP: the bearer, or SSE's `?token=`). */
  token?: string;
  /** The token came in the URL (`?token=`), where proxies log it: API keys are refused there. */
  tokenInUrl?: boolean;
  /** HTTP only: `X-Api-Key`, or an API key given as the bearer. */
  apiKey?: string;
  /** The request headers named in HOOK_HEADERS (lower case), for the connect hook. */
  headers: Record<string, string>;
  /** A WebSocket's client id and codec, made at its upgrade. */
  conn?: Conn;
};

/** What a connection shows of itself (Centrifuge's `conn_info`): its token's `info` claim, else the connect hook's `info`. */
export const connectionInfo = (id: Identity): unknown => id.principal.info ?? id.info;

/** The connection as the refresh, sub_refresh and Centrifugo-format hooks are told it. */
export const subjectOf = (id: Identity): RefreshSubject => ({
  user: id.identified ? id.principal.user : null,
  client: id.conn?.client ?? "",
  transport: id.conn?.transport ?? "http",
  protocol: id.conn?.protocol ?? "json",
  claims: id.identified ? claimsOf(id.principal) : null,
  ip: id.ip,
  info: id.info ?? null,
  ...(id.principal.meta !== undefined ? { meta: id.principal.meta } : {}),
});

/**
 * The one authorization chain of every door that reads or writes a channel (WebSocket `sub`, `presence`,
 * `pub`; SSE; history and last values; presence list; HTTP publish), or calls an RPC method (WebSocket `rpc`:
 * its method permission only):
 *
 *   token (or API key) → connect hook → namespace → permissions → subscribe hook (reads) | publish permission (writes)
 *
 * The namespace step refuses a pattern that spans namespaces (`bad_channel`) and a request using a feature
 * its namespace switched off (`feature_disabled`); an API key with the `publish` scope may still publish where
 * client publishing is off: it is the application's backend. No other switch is a key's to override.
 *
 * `identify` runs the first two (a WebSocket once, at the upgrade; an HTTP request each time, its connect
 * hook answer cached), `authorize` the rest. A door calls both and nothing else, so a new door cannot skip a
 * check. Every refusal is a `GatewayError` (`forbidden`, `hook_unavailable`) or an `AuthError` (no or bad
 * token: 401).
 */
export class AccessControl {
  constructor(
    readonly auth: Authenticator,
    readonly hooks?: Hooks,
    /** Where a failure that is not a refusal (a bug) is logged. */
    readonly log?: Logger,
    /** The namespaces (NAMESPACES_FILE) whose feature switches apply; none: every feature everywhere. */
    readonly namespaces?: NamespacesSection,
  ) {}

  /** The first half of the chain: token (or API key), then the connect hook. */
  async identify(k: Knock): Promise<Identity> {
    const authenticated = this.auth.enabled;
    if (k.tokenInUrl && k.token !== undefined && this.auth.isApiKey(k.token))
      throw new AuthError("invalid", "API keys are not accepted in the URL, where proxies and logs keep them: send X-Api-Key");
    const principal =
      k.transport === "websocket"
        ? await this.websocketPrincipal(k.token)
        : await this.auth.authenticateHttp({ bearer: k.token, apiKey: k.apiKey }, k.transport === "sse");
    if (principal.scopes) return { principal, ip: k.ip, identified: true, trusted: true };
    if (!this.hooks?.connectEnabled) return withConn({ principal, ip: k.ip, identified: authenticated, trusted: false }, k.conn);
    const d = await this.hooks.connect(principal, authenticated, k.ip, k.headers, k.transport, k.conn ?? { client: "", protocol: "json" });
    const id: Writable<Identity> = {
      principal: d.principal,
      ip: k.ip,
      grant: d.grant,
      identified: authenticated || d.grant.user !== undefined,
      trusted: false,
    };
    if (d.info !== undefined) id.info = d.info;
    return withConn(id, k.conn);
  }

  /** A WebSocket's token; an API key given as one is refused saying where keys go (looked for only once the token failed). */
  private async websocketPrincipal(token: string | undefined): Promise<Principal> {
    try {
      return await this.auth.authenticate(token);
    } catch (e) {
      if (token !== undefined && this.auth.isApiKey(token))
        throw new AuthError(
          "invalid",
          "API keys are not accepted on the WebSocket: they are for HTTP requests, in the X-Api-Key header; connect with a token (JWT)",
          {
            cause: e,
          },
        );
      throw e;
    }
  }

  /**
   * The second half: the permission on the channel, then the subscribe hook for reads. `id` may be a getter
   * (a WebSocket's identity, which a `refresh` replaces): the permission is checked again after the hook's
   * await, so a refresh that dropped the right meanwhile is not missed.
   */
  async authorize(id: Identity | (() => Identity), a: Access): Promise<void> {
    await this.admit(id, a);
  }

  /**
   * `authorize`, resolving with what was granted besides allowing: the subscribe hook's grant (an expiry, data for
   * the client) when it was asked, or a subscription token's (`a.token`: its expiry and info). The doors that keep
   * a subscription use them.
   */
  async admit(id: Identity | (() => Identity), a: Access): Promise<ReadGrant> {
    const current = typeof id === "function" ? id : () => id;
    const first = current();
    if (a.right === "admin") {
      this.checkAdmin(first, a.local);
      return {};
    }
    if (a.right === "rpc") {
      if (first.trusted) throw new GatewayError(ErrorCode.Forbidden, "an API key calls no rpc method: the backend answers them");
      check(first.principal, a);
      return {};
    }
    if (first.trusted && !hasScope(first.principal, a.right === "pub" ? "publish" : "read"))
      throw new GatewayError(ErrorCode.Forbidden, `this API key has no ${a.right === "pub" ? "publish" : "read"} scope`);
    this.checkNamespace(first, a);
    if (a.right === "sub" && a.token !== undefined) return { token: await this.subscriptionGrant(first, a.channel, a.token) };
    if (a.right === "sub" && a.byServer === true) return {};
    check(first.principal, a);
    if (a.right === "pub" || first.trusted || a.serverSide || !this.hooks?.subscribeEnabled) return {};
    const grant = await this.hooks.subscribe(
      { user: first.principal.user, channel: a.channel, pattern: isWildcard(a.channel), durable: a.durable ?? null, ip: first.ip, info: first.info ?? null },
      first.identified,
      subjectOf(first),
    );
    check(current().principal, a);
    return grant ? { hook: grant } : {};
  }

  /**
   * A subscription token's grant of `channel` to this identity: refused (`forbidden`) when it is not valid,
   * names another channel or another user; `subscription_expired` when it has expired (ask for a new one).
   */
  async subscriptionGrant(id: Identity, channel: string, token: string): Promise<SubscriptionGrant> {
    let c: SubscriptionClaims;
    try {
      c = await this.auth.verifySubscription(token);
    } catch (e) {
      if (!(e instanceof AuthError)) throw e;
      if (e.reason === "expired")
        throw new GatewayError(ErrorCode.SubscriptionExpired, `subscription token for ${channel} has expired: get a new one`, { cause: e });
      throw new GatewayError(ErrorCode.Forbidden, `subscription token refused: ${e.message}`, { cause: e });
    }
    if (!namesChannel(c.channel, channel)) throw new GatewayError(ErrorCode.Forbidden, `the subscription token is for ${c.channel}, not ${channel}`);
    if (c.user !== undefined && c.user !== id.principal.user)
      throw new GatewayError(ErrorCode.Forbidden, "the subscription token is for another user (its sub is not this connection's user)");
    return { exp: c.exp, ...(c.info !== undefined ? { info: c.info } : {}) };
  }

  /** The control plane: an admin key; with authentication off and no connect hook, a request from this host. */
  private checkAdmin(id: Identity, local: boolean): void {
    if (id.trusted) {
      if (hasScope(id.principal, "admin")) return;
      throw new GatewayError(ErrorCode.Forbidden, "this API key has no admin scope: the control plane needs one that has");
    }
    if (!this.auth.enabled && !this.hooks?.connectEnabled) {
      if (local) return;
      throw new GatewayError(
        ErrorCode.Forbidden,
        "with authentication off the control plane answers requests from this host only (loopback, not through a proxy): turn authentication on and use an API key with the admin scope",
      );
    }
    throw new GatewayError(ErrorCode.Forbidden, "the control plane needs an API key with the admin scope (X-Api-Key)");
  }

  /** A pattern within one stream, and the features the request uses switched on in its namespace. */
  private checkNamespace(id: Identity, a: Exclude<Access, { right: "admin" } | { right: "rpc" }>): void {
    const routes = this.namespaces;
    if (!routes || routes.empty) {
      if (a.right === "pub" && a.ttl)
        throw new GatewayError(ErrorCode.FeatureDisabled, `${a.channel} is in the default stream, which keeps no per-message TTL`);
      return;
    }
    const route = routes.ofPattern(a.channel);
    if (route.kind === "spans") throw new GatewayError(ErrorCode.BadChannel, spansMessage(a.channel, route.names));
    const ns = route.kind === "namespace" ? route.ns : undefined;
    if (a.right === "pub") {
      if (a.ttl && !ns?.stream.allowMsgTtl)
        throw new GatewayError(
          ErrorCode.FeatureDisabled,
          ns ? `namespace ${ns.name} keeps no per-message TTL (allowMsgTtl)` : `${a.channel} is in the default stream, which keeps no per-message TTL`,
        );
      if (a.ttl && ns) checkTtl(ns.name, ns.stream.maxAgeMs, a.ttl);
      if (ns && !ns.features.publish && !id.trusted) throw disabled(ns.name, "publish");
      return;
    }
    if (ns && a.uses) for (const f of a.uses) if (!ns.features[f]) throw disabled(ns.name, f);
  }

  /**
   * The permission part alone, synchronously: for re-checking after an await, when a `refresh` may have
   * replaced the claims meanwhile (a refresh that drops a right ends what it no longer allows).
   */
  permits(p: Principal, a: Access): boolean {
    return deniedBy(p, a) === undefined;
  }
}

/** What a door answers when the chain refuses: the HTTP status, the wire code, and whether retrying helps. */
export type Refusal = { status: number; code: ErrorCode; message: string; temporary: boolean };

/**
 * The refusal of a chain failure: 401 for a missing or bad token, a GatewayError's own, and for anything
 * else (a bug) 500 `internal`, temporary: a door never lets a request through on an error.
 */
export function refusal(e: unknown): Refusal {
  if (e instanceof AuthError) return { status: 401, code: ErrorCode.Unauthorized, message: e.message, temporary: false };
  if (e instanceof GatewayError) return { status: e.status, code: e.code, message: e.message, temporary: e.temporary };
  return { status: 500, code: ErrorCode.Internal, message: "authorization failed: internal error", temporary: true };
}

/** A TTL longer than the stream keeps messages would promise what maxAge takes away first. */
function checkTtl(ns: string, maxAgeMs: number, ttl: string): void {
  const seconds = Number.parseInt(ttl, 10);
  if (maxAgeMs > 0 && seconds * 1_000 > maxAgeMs)
    throw new GatewayError(
      ErrorCode.BadRequest,
      `ttl ${ttl} is longer than namespace ${ns}'s maxAge (${Math.floor(maxAgeMs / 1_000)}s), which removes the message first; use a ttl of at most ${Math.floor(maxAgeMs / 1_000)}s`,
    );
}

function disabled(ns: string, f: Feature): GatewayError {
  return new GatewayError(ErrorCode.FeatureDisabled, `namespace ${ns} has ${f} switched off (${FEATURE_DOORS[f]})`);
}

function check(p: Principal, a: Access): void {
  const denied = deniedBy(p, a);
  if (denied) throw new GatewayError(ErrorCode.Forbidden, denied);
}

function deniedBy(p: Principal, a: Access): string | undefined {
  if (a.right === "admin") return "the control plane needs an API key";
  if (a.right === "rpc") return canCall(p.perms, a.method) ? undefined : `no permission to call ${a.method}`;
  if (a.right === "sub") return canSubscribe(p.perms, a.channel) ? undefined : `no permission to read ${a.channel}`;
  return canPublish(p.perms, a.channel) ? undefined : `no permission to publish to ${a.channel}`;
}

/**
 * Whether a subscription token's `channel` claim names `channel`: the channel itself, or the Centrifugo name
 * that maps to it (protocol/centrifugo-channels.ts: `chat:room.1` is `chat.room.1`), as a backend moving from
 * Centrifugo signs them.
 */
function namesChannel(claim: string, channel: string): boolean {
  if (claim === channel) return true;
  const m = toGatewayChannel(claim);
  return m.ok && m.name === channel;
}
