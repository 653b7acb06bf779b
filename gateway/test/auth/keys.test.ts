import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, exportSPKI, generateKeyPair } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { TestClient } from "#testkit/ws-client.js";
import { AUDIENCE, ISSUER, refusal, sign, tryConnect } from "#testkit/auth.js";

let nats: NatsServerHandle;
let pemGw: GatewayHandle;
let jwksGw: GatewayHandle;
let dir: string;
let es: CryptoKeyPair;
let es2: CryptoKeyPair;
let rsa: CryptoKeyPair;
let stranger: CryptoKeyPair;
const common = { JWT_ISSUER: ISSUER, JWT_AUDIENCE: AUDIENCE };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "fgw-keys-"));
  [es, es2, rsa, stranger] = await Promise.all([
    generateKeyPair("ES256", { extractable: true }),
    generateKeyPair("ES256", { extractable: true }),
    generateKeyPair("RS256", { extractable: true, modulusLength: 2048 }),
    generateKeyPair("ES256"),
  ]);
  writeFileSync(join(dir, "es256.pem"), await exportSPKI(es.publicKey));
  const jwk = async (k: CryptoKey, kid: string, alg: string) => ({ ...(await exportJWK(k)), kid, alg, use: "sig" });
  writeFileSync(
    join(dir, "jwks.json"),
    JSON.stringify({ keys: [await jwk(es.publicKey, "k1", "ES256"), await jwk(es2.publicKey, "k2", "ES256"), await jwk(rsa.publicKey, "r1", "RS256")] }),
  );
  nats = await startNatsServer();
  [pemGw, jwksGw] = await Promise.all([
    startGateway({ natsUrl: nats.url, workers: 1, logLevel: "info", env: { ...common, JWT_PUBLIC_KEY_FILE: join(dir, "es256.pem") } }),
    startGateway({ natsUrl: nats.url, workers: 1, logLevel: "info", env: { ...common, JWT_JWKS_FILE: join(dir, "jwks.json") } }),
  ]);
});
afterAll(async () => {
  await Promise.all([pemGw?.stop(), jwksGw?.stop()]);
  await nats?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const accepted = async (gw: GatewayHandle, token: string): Promise<boolean> => {
  const r = await tryConnect(gw.wsUrl, { headers: { authorization: `Bearer ${token}` } });
  if (r instanceof TestClient) {
    const pong = await r.request({ op: "ping" });
    r.close();
    return pong.op === "pong";
  }
  expect(r.status).toBe(401);
  return false;
};

describe("auth — public keys", () => {
  it("PEM (ES256): the key's tokens pass; another key, HS256 with any secret, and RS256 are refused", async () => {
    expect(await accepted(pemGw, await sign({}, { key: es.privateKey, alg: "ES256" }))).toBe(true);
    expect(await accepted(pemGw, await sign({}, { key: stranger.privateKey, alg: "ES256" }))).toBe(false);
    expect(await accepted(pemGw, await sign({}))).toBe(false); // HS256 is never accepted with a public key
    expect(await accepted(pemGw, await sign({}, { key: rsa.privateKey, alg: "RS256" }))).toBe(false);
  });

  it("JWKS file: the key is picked by kid (ES256 and RS256); unknown kid or a stranger's key is refused", async () => {
    expect(await accepted(jwksGw, await sign({}, { key: es.privateKey, alg: "ES256", kid: "k1" }))).toBe(true);
    expect(await accepted(jwksGw, await sign({}, { key: es2.privateKey, alg: "ES256", kid: "k2" }))).toBe(true);
    expect(await accepted(jwksGw, await sign({}, { key: rsa.privateKey, alg: "RS256", kid: "r1" }))).toBe(true);
    expect(await accepted(jwksGw, await sign({}, { key: es.privateKey, alg: "ES256", kid: "k2" }))).toBe(false);
    expect(await accepted(jwksGw, await sign({}, { key: stranger.privateKey, alg: "ES256", kid: "zz" }))).toBe(false);
    expect(await accepted(jwksGw, await sign({}, { key: es.privateKey, alg: "ES256", kid: "k1", aud: "other" }))).toBe(false);
    expect((await refusal(jwksGw.wsUrl)).status).toBe(401);
  });

  it("an unreadable or wrong key file stops the gateway at start, naming the setting", async () => {
    writeFileSync(join(dir, "bad.pem"), "not a key");
    const r = await startGateway({ natsUrl: nats.url, workers: 1, env: { JWT_PUBLIC_KEY_FILE: join(dir, "bad.pem") } }).then(
      async (gw) => (await gw.stop(), "started"),
      (e: Error) => e.message,
    );
    expect(r).toMatch(/JWT_PUBLIC_KEY_FILE/);
  });
});
