import { type SettingTable, type SliceOf, type ValuesOf, checkHttpUrl, derive, int, oneOf, section, trimmed } from "../section-kit.js";
import { parseBool, parseBytes, parseDuration, parseIntStrict, parseList } from "../parse.js";

/** The bodies a hook sends and reads: the gateway's own (native), or Centrifugo's proxy format (centrifugo). */
export type HookFormat = "native" | "centrifugo";
/** The hooks whose format can be chosen. */
export type HookName = "connect" | "subscribe" | "publish" | "rpc" | "refresh" | "subRefresh";

/** A per-hook format setting: unset ("") takes HOOK_FORMAT's. */
const formatOf = (env: string, what: string) => ({
  env,
  shown: "(HOOK_FORMAT)",
  doc: `The ${what} hook's body format (native or centrifugo); unset: HOOK_FORMAT's`,
  default: () => "" as HookFormat | "",
  parse: oneOf<HookFormat | "">("native", "centrifugo"),
});

const settings = {
  connectHookUrl: {
    env: "CONNECT_HOOK_URL",
    shown: "(unset)",
    doc: "POSTs each WebSocket upgrade and each HTTP request that reads or writes a channel (user, claims, ip, headers, transport) here: allow, deny (403) or attach channels; unreachable: 503 hook_unavailable",
    default: () => "",
    parse: trimmed,
    check: (v: string) => checkHttpUrl(v),
  },
  subscribeHookUrl: {
    env: "SUBSCRIBE_HOOK_URL",
    shown: "(unset)",
    doc: "POSTs each read of a channel or pattern (WS `sub` and `presence`, SSE, history, presence list; user, channel, pattern, ip, connect info) here after the permission check: allow, or deny (`forbidden`); unreachable: `hook_unavailable`",
    default: () => "",
    parse: trimmed,
    check: (v: string) => checkHttpUrl(v),
  },
  subscribeHookPatterns: {
    env: "SUBSCRIBE_HOOK_PATTERNS",
    shown: "explicit",
    doc: 'A read of a pattern (`room.*`, `room.>`) that the subscribe hook is asked about (with `"pattern": true` in the request): explicit, allowed only when the hook answers `{"allow": true, "pattern": true}`; allow, when it answers `{"allow": true}`',
    default: () => "explicit" as "explicit" | "allow",
    parse: oneOf("explicit", "allow"),
  },
  publishHookUrl: {
    env: "PUBLISH_HOOK_URL",
    shown: "(unset)",
    doc: "POSTs each client publish (WS `pub`, HTTP publish, each batch item; user, client, channel, data, ip, connect info) here before it is stored: allow, allow with new `data` (stored instead), or deny (`forbidden`, or the answer's `code` when it is a wire code); unreachable: `hook_unavailable`",
    default: () => "",
    parse: trimmed,
    check: (v: string) => checkHttpUrl(v),
  },
  publishHookApiKeys: {
    env: "PUBLISH_HOOK_API_KEYS",
    shown: "false",
    doc: "Ask the publish hook about publishes made with an API key too (by default a key, the application's backend, skips it)",
    default: () => false,
    parse: parseBool,
    boolean: true,
  },
  rpcHookUrl: {
    env: "RPC_HOOK_URL",
    shown: "(unset)",
    doc: "POSTs each WebSocket `rpc` (method, data, user, claims, client, ip, connect info) here after the method permission (the token's `rpc` claim) allowed it; its `{data}` or `{error}` is the client's answer; unreachable: `hook_unavailable`. Unset: `rpc` is answered `rpc_unavailable`",
    default: () => "",
    parse: trimmed,
    check: (v: string) => checkHttpUrl(v),
  },
  refreshHookUrl: {
    env: "REFRESH_HOOK_URL",
    shown: "(unset)",
    doc: "POSTs a WebSocket's expiry (its token's `exp`, or the connect hook's `expire_at`) here when it is reached, instead of waiting for the client's `refresh`: a new expiry extends the connection; expired, a refusal or no answer closes it with 4001 (or the answer's disconnect code)",
    default: () => "",
    parse: trimmed,
    check: (v: string) => checkHttpUrl(v),
  },
  subRefreshHookUrl: {
    env: "SUB_REFRESH_HOOK_URL",
    shown: "(unset)",
    doc: "POSTs a WebSocket subscription's expiry (the subscribe hook's `expire_at`/`exp`) here when it is reached: a new expiry extends the subscription; expired, a refusal or no answer ends it (an `err` naming it; the socket stays). Unset: the subscription ends at its expiry",
    default: () => "",
    parse: trimmed,
    check: (v: string) => checkHttpUrl(v),
  },
  hookFormat: {
    env: "HOOK_FORMAT",
    shown: "native",
    doc: "The body format of every hook: native (this gateway's; PROTOCOL.md) or centrifugo (Centrifugo's proxy requests and `result`/`error`/`disconnect` answers; docs/backends.md); each hook's own *_HOOK_FORMAT overrides it",
    default: () => "native" as HookFormat,
    parse: oneOf<HookFormat>("native", "centrifugo"),
  },
  connectHookFormat: formatOf("CONNECT_HOOK_FORMAT", "connect"),
  subscribeHookFormat: formatOf("SUBSCRIBE_HOOK_FORMAT", "subscribe"),
  publishHookFormat: formatOf("PUBLISH_HOOK_FORMAT", "publish"),
  rpcHookFormat: formatOf("RPC_HOOK_FORMAT", "RPC"),
  refreshHookFormat: formatOf("REFRESH_HOOK_FORMAT", "refresh"),
  subRefreshHookFormat: formatOf("SUB_REFRESH_HOOK_FORMAT", "sub_refresh"),
  rpcHookTimeoutMs: {
    env: "RPC_HOOK_TIMEOUT",
    shown: "5s",
    doc: "An `rpc` the backend has not answered by then fails with `hook_unavailable` (temporary)",
    default: () => 5_000,
    parse: parseDuration,
    check: int(10, 60_000),
  },
  rpcMaxInFlight: {
    env: "RPC_MAX_IN_FLIGHT",
    shown: "16",
    doc: "`rpc` calls one connection may have unanswered at once; one more is refused with `rate_limited` (temporary) without asking the backend",
    default: () => 16,
    parse: parseIntStrict,
    check: int(1, 10_000),
  },
  hookTimeoutMs: {
    env: "HOOK_TIMEOUT",
    shown: "2s",
    doc: "A hook call not answered by then fails closed (`hook_unavailable`)",
    default: () => 2_000,
    parse: parseDuration,
    check: int(10, 60_000),
  },
  hookSecretFile: {
    env: "HOOK_SECRET_FILE",
    shown: "(unset)",
    doc: "File holding the secret every hook request (connect, subscribe, publish, RPC, refresh, sub_refresh) is signed with (`Fanout-Signature`, as the events webhook's; PROTOCOL.md), one a line: a second line (the previous secret, while rotating) adds a second signature; unset: unsigned",
    default: () => "",
    parse: trimmed,
  },
  hookCacheTtlMs: {
    env: "HOOK_CACHE_TTL",
    shown: "10s",
    doc: "Hook answers are reused for an identical request (everything the hook is sent) for this long; subscribe answers only for identified users; 0 disables the cache",
    default: () => 10_000,
    parse: parseDuration,
    check: int(0, 86_400_000),
  },
  hookCacheSize: {
    env: "HOOK_CACHE_SIZE",
    shown: "10000",
    doc: "Most answers kept per hook and worker (least recently used go first)",
    default: () => 10_000,
    parse: parseIntStrict,
    check: int(1, 10_000_000),
  },
  hookMaxInFlight: {
    env: "HOOK_MAX_IN_FLIGHT",
    shown: "256",
    doc: "Hook calls open at once per process (RPC calls count apart, with the same bound); more wait for one to end, within their timeout",
    default: () => 256,
    parse: parseIntStrict,
    check: int(1, 100_000),
  },
  hookMaxAnswerBytes: {
    env: "HOOK_MAX_ANSWER_BYTES",
    shown: "1MiB",
    doc: "Longest body a hook (any of them) may answer with; the gateway stops reading a longer one at this size and fails closed (`hook_unavailable`, not temporary)",
    default: () => 1_048_576,
    parse: parseBytes,
    check: int(256, 67_108_864),
  },
  hookHeaders: {
    env: "HOOK_HEADERS",
    shown: "origin,user-agent,cookie,x-forwarded-for",
    doc: "Request headers (upgrades and HTTP requests) passed to the connect hook; with authentication off it identifies users from them",
    default: () => ["origin", "user-agent", "cookie", "x-forwarded-for"],
    parse: (s: string) => parseList(s).map((h) => h.toLowerCase()),
    check: (v: string[]) => (v.find((h) => !/^[a-z0-9-]+$/.test(h)) ? "must be header names" : undefined),
  },
} satisfies SettingTable;

export type HooksValues = ValuesOf<typeof settings>;

export const hooks = section({
  name: "hooks",
  title:
    "Hooks to the application backend (auth/hooks.ts, calling through backend/caller.ts): allow or deny connections, subscriptions and publishes, answer RPC",
  settings,
  slice: {
    connectUrl: "connectHookUrl",
    subscribeUrl: "subscribeHookUrl",
    publishUrl: "publishHookUrl",
    /** API-key publishers are asked too. */
    publishApiKeys: "publishHookApiKeys",
    rpcUrl: "rpcHookUrl",
    refreshUrl: "refreshHookUrl",
    subRefreshUrl: "subRefreshHookUrl",
    /** Each hook's body format: its own setting, else HOOK_FORMAT. */
    formats: derive(
      ["hookFormat", "connectHookFormat", "subscribeHookFormat", "publishHookFormat", "rpcHookFormat", "refreshHookFormat", "subRefreshHookFormat"],
      formatsOf,
    ),
    rpcTimeoutMs: "rpcHookTimeoutMs",
    /** Unanswered `rpc` calls per connection. */
    rpcMaxInFlight: "rpcMaxInFlight",
    timeoutMs: "hookTimeoutMs",
    cacheTtlMs: "hookCacheTtlMs",
    cacheSize: "hookCacheSize",
    maxInFlight: "hookMaxInFlight",
    /** Longest answer body read from a hook. */
    maxAnswerBytes: "hookMaxAnswerBytes",
    /** Hook requests are signed with its secrets (read once per process); "": unsigned. */
    secretFile: "hookSecretFile",
    headers: "hookHeaders",
    /** A wildcard read needs the hook's `"pattern": true` (explicit), or only `allow` (allow). */
    patterns: "subscribeHookPatterns",
  },
});

/** Each hook's format: its own setting when given, otherwise HOOK_FORMAT. */
function formatsOf(c: HooksValues): Readonly<Record<HookName, HookFormat>> {
  const or = (v: HookFormat | ""): HookFormat => (v === "" ? c.hookFormat : v);
  return Object.freeze({
    connect: or(c.connectHookFormat),
    subscribe: or(c.subscribeHookFormat),
    publish: or(c.publishHookFormat),
    rpc: or(c.rpcHookFormat),
    refresh: or(c.refreshHookFormat),
    subRefresh: or(c.subRefreshHookFormat),
  });
}

export type HooksSection = SliceOf<typeof settings, typeof hooks.slice>;
