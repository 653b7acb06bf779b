import { type SettingTable, type SliceOf, type ValuesOf, int, section, trimmed } from "../section-kit.js";
import { parseDuration, parseList } from "../parse.js";

/** JWS algorithms the gateway verifies (never `none`). */
export const JWT_ALGORITHMS = ["HS256", "HS384", "HS512", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];

const settings = {
  jwtSecret: {
    env: "JWT_SECRET",
    shown: "(unset)",
    doc: "HMAC secret (HS256/384/512), at least 32 characters; setting it turns authentication on",
    default: () => "",
    parse: trimmed,
    check: (v: string) => (v.length > 0 && v.length < 32 ? "must be at least 32 characters" : undefined),
  },
  jwtPublicKeyFile: {
    env: "JWT_PUBLIC_KEY_FILE",
    shown: "(unset)",
    doc: "PEM public key (SPKI) or X.509 certificate for RS/PS/ES/EdDSA tokens; turns authentication on",
    default: () => "",
    parse: trimmed,
  },
  jwtJwksFile: {
    env: "JWT_JWKS_FILE",
    shown: "(unset)",
    doc: 'Local JWKS file ({"keys":[...]}, read once at start; tokens pick a key by kid); turns authentication on',
    default: () => "",
    parse: trimmed,
  },
  jwtAlgorithms: {
    env: "JWT_ALGORITHMS",
    shown: "(by key)",
    doc: "Accepted JWS algorithms; default HS256 for a secret, the key type's for a PEM, each key's alg (or type) for a JWKS",
    default: () => [] as string[],
    parse: parseList,
    check: (v: string[]) => {
      const bad = v.find((a) => !JWT_ALGORITHMS.includes(a));
      return bad ? `has "${bad}"; use ${JWT_ALGORITHMS.join(", ")}` : undefined;
    },
  },
  jwtIssuer: { env: "JWT_ISSUER", shown: "(any)", doc: "Required `iss` claim", default: () => "", parse: trimmed },
  jwtAudience: {
    env: "JWT_AUDIENCE",
    shown: "(any)",
    doc: "Required `aud` claim (one of the token's audiences)",
    default: () => "",
    parse: trimmed,
  },
  jwtClockToleranceSec: {
    env: "JWT_CLOCK_TOLERANCE",
    shown: "5s",
    doc: "Clock skew allowed on exp/nbf/iat",
    default: () => 5,
    parse: (s: string) => Math.round(parseDuration(s) / 1000),
    check: int(0, 300),
  },
  apiKeys: {
    env: "API_KEYS",
    shown: "(none)",
    doc: "Comma list of admin keys (16+ characters; every scope: publish, read, the control plane) sent as X-Api-Key; needs authentication on. Prefer API_KEYS_FILE, which gives each key its scopes",
    default: () => [] as string[],
    parse: parseList,
    check: (v: string[]) => (v.some((k) => k.length < 16 || /\s/.test(k)) ? "keys must be at least 16 characters without spaces" : undefined),
  },
  apiKeysFile: {
    env: "API_KEYS_FILE",
    shown: "(none)",
    doc: "File of API keys, one per line with its scopes: `<key> publish,read` (scopes: publish, read, admin; admin is the control plane and includes the others); needs authentication on",
    default: () => "",
    parse: trimmed,
  },
} satisfies SettingTable;

export type AuthValues = ValuesOf<typeof settings>;

export const auth = section({
  name: "auth",
  title: "Authentication (gateway/AUTH.md): any JWT key setting turns it on",
  settings,
  slice: {
    jwtSecret: "jwtSecret",
    jwtPublicKeyFile: "jwtPublicKeyFile",
    jwtJwksFile: "jwtJwksFile",
    jwtAlgorithms: "jwtAlgorithms",
    jwtIssuer: "jwtIssuer",
    jwtAudience: "jwtAudience",
    jwtClockToleranceSec: "jwtClockToleranceSec",
    apiKeys: "apiKeys",
    apiKeysFile: "apiKeysFile",
  },
});

export type AuthSection = SliceOf<typeof settings, typeof auth.slice>;
