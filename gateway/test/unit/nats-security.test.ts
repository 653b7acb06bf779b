// Reading the NATS credential and TLS files (broker/jetstream/nats-security.ts): each file's content is checked once at
// start and a bad one names its setting; the nkey authenticator signs the server's nonce (verified with the
// public key); nothing secret is in what the start log shows.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nkeys } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import { connectFields, describeNatsSecurity, loadNatsSecurity, natsJsOptions } from "../../src/broker/jetstream/nats-security.js";
import type { NatsSecuritySection } from "../../src/config/sections/index.js";
import { ConfigError } from "../../src/errors.js";
import { jwtSetup } from "#testkit/nats-jwt.js";

const dir = mkdtempSync(join(tmpdir(), "fgw-natssec-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string) => {
  const f = join(dir, name);
  writeFileSync(f, text);
  return f;
};
const none: NatsSecuritySection = {
  credsFile: "",
  nkeySeedFile: "",
  user: "",
  passwordFile: "",
  tokenFile: "",
  tlsCaFile: "",
  tlsCertFile: "",
  tlsKeyFile: "",
  tlsFirst: false,
};

describe("NATS security — files", () => {
  it.each([
    [{ nkeySeedFile: file("garbage.nk", "not a seed\n") }, "NATS_NKEY_SEED_FILE"],
    [{ nkeySeedFile: file("bad-seed.nk", "SUAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n") }, "NATS_NKEY_SEED_FILE"],
    [{ credsFile: file("user.creds", "-----BEGIN NATS USER JWT-----\nabc\n------END NATS USER JWT------\n") }, "NATS_CREDS_FILE"],
    [{ user: "gw", passwordFile: file("empty-pw", "\n") }, "NATS_PASSWORD_FILE"],
    [{ user: "gw", passwordFile: dir }, "NATS_PASSWORD_FILE"],
    [{ tokenFile: file("empty-token", "  \n") }, "NATS_TOKEN_FILE"],
    [{ tlsCaFile: file("ca.pem", "-----BEGIN CERTIFICATE-----\nnope\n-----END CERTIFICATE-----\n") }, "NATS_TLS_CA_FILE"],
  ] as [Partial<NatsSecuritySection>, string][])("a bad file names its setting: %j", (over, setting) => {
    try {
      loadNatsSecurity({ ...none, ...over });
      expect.unreachable("should have thrown");
    } catch (e) {
      expect(e).toBeInstanceOf(ConfigError);
      expect((e as ConfigError).setting).toBe(setting);
      expect((e as Error).message).toContain(`invalid ${setting} (--${setting.toLowerCase().replace(/_/g, "-")})`);
    }
  });

  it("nkey seed: CONNECT carries the public key and a signature of the nonce that the key verifies; nothing secret is described", () => {
    const kp = nkeys.createUser();
    const seed = new TextDecoder().decode(kp.getSeed());
    const sec = loadNatsSecurity({ ...none, nkeySeedFile: file("gw.nk", `${seed}\n`) });
    const f = connectFields(sec, "a-nonce") as { nkey: string; sig: string };
    expect(f.nkey).toBe(kp.getPublicKey());
    const sig = Buffer.from(f.sig, "base64url");
    expect(nkeys.fromPublic(f.nkey).verify(new TextEncoder().encode("a-nonce"), sig)).toBe(true);
    expect(describeNatsSecurity(sec)).toEqual({ auth: "nkey", tls: "if required" });
    expect(JSON.stringify(describeNatsSecurity(sec))).not.toContain(seed);
  });

  it("creds file: CONNECT carries the user JWT and a signature of the nonce by the user's key", () => {
    const text = jwtSetup().creds("u", { publish: [">"], subscribe: [">"] });
    const sec = loadNatsSecurity({ ...none, credsFile: file("u.creds", text) });
    const f = connectFields(sec, "nonce-2") as { jwt: string; sig: string };
    expect(text).toContain(f.jwt);
    const sub = (JSON.parse(Buffer.from(f.jwt.split(".")[1]!, "base64url").toString()) as { sub: string }).sub;
    expect(nkeys.fromPublic(sub).verify(new TextEncoder().encode("nonce-2"), Buffer.from(f.sig, "base64url"))).toBe(true);
    expect(describeNatsSecurity(sec).auth).toBe("creds");
  });

  it("user and password, token: the password file's trailing newline is not part of it; TLS options carry the PEM contents", () => {
    const up = loadNatsSecurity({ ...none, user: "gw", passwordFile: file("pw", "s3cret\n") });
    expect(connectFields(up, "n")).toEqual({ user: "gw", pass: "s3cret" });
    const tok = loadNatsSecurity({ ...none, tokenFile: file("tok", "t0ken\n") });
    expect(connectFields(tok, undefined)).toEqual({ auth_token: "t0ken" });
    expect(natsJsOptions(loadNatsSecurity({ ...none, tlsFirst: true })).tls).toEqual({ ca: undefined, cert: undefined, key: undefined, handshakeFirst: true });
    expect(natsJsOptions(loadNatsSecurity(none))).toEqual({});
  });
});
