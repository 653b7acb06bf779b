import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import {
  credsAuthenticator,
  nkeyAuthenticator,
  tokenAuthenticator,
  usernamePasswordAuthenticator,
  type Auth,
  type Authenticator,
  type NodeConnectionOptions,
} from "@nats-io/transport-node";
import type { NatsSecuritySection } from "../../config/sections/index.js";
import { ConfigError } from "../../errors.js";

/** How the gateway proves who it is to NATS. */
export type NatsAuthMethod = "none" | "user" | "token" | "nkey" | "creds";

/** TLS to NATS: PEM contents (read once), and whether TLS starts before the server's INFO. */
export type NatsTls = Readonly<{ ca?: string; cert?: string; key?: string; handshakeFirst: boolean }>;

/**
 * The NATS credentials and TLS material, read from their files once per process. Every connection to NATS
 * takes it: nats.js' (`natsJsOptions`) and the direct-get link's (`connectFields`, `tls`), so both
 * authenticate the same way — the link calls the same nats.js authenticator with the server's nonce.
 * It never appears in a log: `describe` says what is in use without a secret.
 */
export type NatsSecurity = Readonly<{
  method: NatsAuthMethod;
  authenticator?: Authenticator;
  /** Absent: plain TCP unless the server requires TLS (then the system CAs check it, as nats.js does). */
  tls?: NatsTls;
}>;

export const NO_NATS_SECURITY: NatsSecurity = Object.freeze({ method: "none" });

const flagOf = (env: string) => `--${env.toLowerCase().replace(/_/g, "-")}`;
const fail = (env: string, why: string): never => {
  throw new ConfigError(env, `invalid ${env} (${flagOf(env)}): ${why}`);
};

function read(env: string, file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    return fail(env, `cannot read ${file}: ${(e as Error).message}`);
  }
}

/** Calls the authenticator once with a nonce, so that a malformed seed or creds file fails at start. */
function probe(env: string, file: string, a: Authenticator, want: "jwt" | "sig"): Authenticator {
  let auth: Auth | undefined;
  try {
    auth = a("probe");
  } catch (e) {
    return fail(env, `${file} holds no valid NATS key: ${(e as Error).message}`);
  }
  if (!(auth as Record<string, unknown> | undefined)?.[want]) fail(env, `${file} holds no valid NATS key`);
  return a;
}

function readAuth(s: NatsSecuritySection): Pick<NatsSecurity, "method" | "authenticator"> {
  if (s.credsFile) {
    const text = read("NATS_CREDS_FILE", s.credsFile);
    if (!/BEGIN NATS USER JWT/.test(text) || !/BEGIN USER NKEY SEED/.test(text))
      fail("NATS_CREDS_FILE", `${s.credsFile} is not a NATS .creds file (a user JWT and an nkey seed)`);
    const a = probe("NATS_CREDS_FILE", s.credsFile, credsAuthenticator(new TextEncoder().encode(text)), "jwt");
    return { method: "creds", authenticator: a };
  }
  if (s.nkeySeedFile) {
    const seed = read("NATS_NKEY_SEED_FILE", s.nkeySeedFile).trim();
    if (!seed.startsWith("SU")) fail("NATS_NKEY_SEED_FILE", `${s.nkeySeedFile} does not hold a user nkey seed (SU...)`);
    const a = probe("NATS_NKEY_SEED_FILE", s.nkeySeedFile, nkeyAuthenticator(new TextEncoder().encode(seed)), "sig");
    return { method: "nkey", authenticator: a };
  }
  if (s.user) {
    const pass = read("NATS_PASSWORD_FILE", s.passwordFile).replace(/\r?\n$/, "");
    if (!pass) fail("NATS_PASSWORD_FILE", `${s.passwordFile} is empty`);
    return { method: "user", authenticator: usernamePasswordAuthenticator(s.user, pass) };
  }
  if (s.tokenFile) {
    const token = read("NATS_TOKEN_FILE", s.tokenFile).trim();
    if (!token) fail("NATS_TOKEN_FILE", `${s.tokenFile} is empty`);
    return { method: "token", authenticator: tokenAuthenticator(token) };
  }
  return { method: "none" };
}

function readTls(s: NatsSecuritySection): NatsTls | undefined {
  if (!s.tlsCaFile && !s.tlsCertFile && !s.tlsFirst) return undefined;
  const pem = (env: string, file: string, parse: (pem: string) => unknown, what: string): string | undefined => {
    if (!file) return undefined;
    const text = read(env, file);
    try {
      parse(text);
    } catch (e) {
      fail(env, `${file} is not a PEM ${what}: ${(e as Error).message}`);
    }
    return text;
  };
  const cert = (t: string) => new X509Certificate(t);
  return Object.freeze({
    ca: pem("NATS_TLS_CA_FILE", s.tlsCaFile, cert, "certificate"),
    cert: pem("NATS_TLS_CERT_FILE", s.tlsCertFile, cert, "certificate"),
    key: pem("NATS_TLS_KEY_FILE", s.tlsKeyFile, (t) => createPrivateKey(t), "private key"),
    handshakeFirst: s.tlsFirst,
  });
}

/** Reads and checks the files of the section. Throws ConfigError naming the setting whose file is unreadable or wrong. */
export function loadNatsSecurity(s: NatsSecuritySection): NatsSecurity {
  return Object.freeze({ ...readAuth(s), tls: readTls(s) });
}

/** The embedded nats-server's credentials: the token it was started with (no TLS: it listens on loopback). */
export function embeddedNatsSecurity(token: string): NatsSecurity {
  return Object.freeze({ method: "token", authenticator: tokenAuthenticator(token) });
}

/** The nats.js connection options for it. */
export function natsJsOptions(sec: NatsSecurity): Pick<NodeConnectionOptions, "authenticator" | "tls"> {
  const out: Pick<NodeConnectionOptions, "authenticator" | "tls"> = {};
  if (sec.authenticator) out.authenticator = sec.authenticator;
  if (sec.tls) out.tls = { ...sec.tls };
  return out;
}

/** The CONNECT fields that authenticate (user/pass, auth_token, nkey + sig, jwt + sig) for the server's nonce. */
export function connectFields(sec: NatsSecurity, nonce: string | undefined): Auth | Record<string, never> {
  return sec.authenticator?.(nonce) ?? {};
}

/** What is in use, for the start log: no secret. */
export function describeNatsSecurity(sec: NatsSecurity): { auth: NatsAuthMethod; tls: string } {
  const tls = sec.tls ? (sec.tls.handshakeFirst ? "first" : sec.tls.cert ? "mutual" : "on") : "if required";
  return { auth: sec.method, tls };
}
