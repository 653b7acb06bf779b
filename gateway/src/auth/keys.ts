import { createPublicKey, X509Certificate, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from "jose";
import type { AuthSection } from "../config/sections/index.js";
import { ConfigError } from "../errors.js";

/** Verification key material, loaded once at worker start, and the algorithms it accepts. */
export type KeyMaterial = { key: Uint8Array | KeyObject | JWTVerifyGetKey; algorithms: string[]; source: "secret" | "public-key" | "jwks" };

/** True when any JWT key setting is present: authentication is on. */
export { authEnabled } from "../config/checks.js";

/** Loads the configured key. Throws ConfigError naming the setting when the file is unreadable or wrong. */
export function loadKeyMaterial(c: Pick<AuthSection, "jwtSecret" | "jwtPublicKeyFile" | "jwtJwksFile" | "jwtAlgorithms">): KeyMaterial | undefined {
  if (c.jwtSecret)
    return { key: new TextEncoder().encode(c.jwtSecret), algorithms: c.jwtAlgorithms.length ? [...c.jwtAlgorithms] : ["HS256"], source: "secret" };
  if (c.jwtPublicKeyFile) {
    const key = readPem(c.jwtPublicKeyFile);
    return { key, algorithms: c.jwtAlgorithms.length ? [...c.jwtAlgorithms] : algorithmsOf(key), source: "public-key" };
  }
  if (c.jwtJwksFile) {
    const jwks = readJwks(c.jwtJwksFile);
    const algs = c.jwtAlgorithms.length ? [...c.jwtAlgorithms] : [...new Set(jwks.keys.flatMap((k) => (k.alg ? [k.alg] : jwkAlgorithms(k.kty ?? "", k.crv))))];
    return { key: createLocalJWKSet(jwks), algorithms: algs.length ? algs : ["RS256", "ES256"], source: "jwks" };
  }
  return undefined;
}

function readPem(file: string): KeyObject {
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (e) {
    throw new ConfigError("JWT_PUBLIC_KEY_FILE", `invalid JWT_PUBLIC_KEY_FILE (--jwt-public-key-file): cannot read ${file}: ${(e as Error).message}`);
  }
  try {
    return pem.includes("BEGIN CERTIFICATE") ? new X509Certificate(pem).publicKey : createPublicKey(pem);
  } catch (e) {
    throw new ConfigError(
      "JWT_PUBLIC_KEY_FILE",
      `invalid JWT_PUBLIC_KEY_FILE (--jwt-public-key-file): ${file} is not a PEM public key or certificate: ${(e as Error).message}`,
    );
  }
}

function readJwks(file: string): JSONWebKeySet {
  let jwks: unknown;
  try {
    jwks = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new ConfigError("JWT_JWKS_FILE", `invalid JWT_JWKS_FILE (--jwt-jwks-file): cannot read ${file} as JSON: ${(e as Error).message}`);
  }
  const keys = (jwks as { keys?: unknown })?.keys;
  if (!Array.isArray(keys) || keys.length === 0 || keys.some((k) => typeof k !== "object" || k === null || typeof (k as { kty?: unknown }).kty !== "string")) {
    throw new ConfigError("JWT_JWKS_FILE", `invalid JWT_JWKS_FILE (--jwt-jwks-file): ${file} must hold {"keys":[JWK, ...]} with at least one key`);
  }
  if (keys.some((k) => (k as { kty: string }).kty === "oct" || "d" in (k as object))) {
    throw new ConfigError(
      "JWT_JWKS_FILE",
      `invalid JWT_JWKS_FILE (--jwt-jwks-file): ${file} holds a secret or private key; publish public keys only (use JWT_SECRET for HMAC)`,
    );
  }
  return jwks as JSONWebKeySet;
}

function jwkAlgorithms(kty: string, crv?: string): string[] {
  if (kty === "RSA") return ["RS256"];
  if (kty === "EC") return [({ "P-256": "ES256", "P-384": "ES384", "P-521": "ES512" } as Record<string, string>)[crv ?? ""] ?? "ES256"];
  if (kty === "OKP") return ["EdDSA", "Ed25519"];
  return [];
}

function algorithmsOf(key: KeyObject): string[] {
  const t = key.asymmetricKeyType;
  if (t === "rsa") return ["RS256"];
  if (t === "rsa-pss") return ["PS256"];
  if (t === "ed25519") return ["EdDSA", "Ed25519"];
  if (t === "ec")
    return [({ prime256v1: "ES256", secp384r1: "ES384", secp521r1: "ES512" } as Record<string, string>)[key.asymmetricKeyDetails?.namedCurve ?? ""] ?? "ES256"];
  throw new ConfigError("JWT_PUBLIC_KEY_FILE", `invalid JWT_PUBLIC_KEY_FILE (--jwt-public-key-file): unsupported key type ${t}`);
}
