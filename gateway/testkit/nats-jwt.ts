// NATS decentralized auth for the tests without nsc: an operator, an account with JetStream and a user, as
// JWTs signed with nkeys (ed25519, the `ed25519-nkey` JWT algorithm), the server config that trusts the
// operator and preloads the account (memory resolver), and the user's .creds file.
import { createHash } from "node:crypto";
import { nkeys } from "@nats-io/transport-node";

type KeyPair = ReturnType<typeof nkeys.createOperator>;

const b64url = (b: Uint8Array | string): string => Buffer.from(b).toString("base64url");
const BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
function base32(b: Uint8Array): string {
  let out = "";
  let bits = 0;
  let value = 0;
  for (const x of b) {
    value = (value << 8) | x;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out;
}

/** A JWT of `nats` claims about `subject`, signed by `issuer`. */
function sign(issuer: KeyPair, subject: string, name: string, nats: Record<string, unknown>): string {
  const claims: Record<string, unknown> = {
    jti: "",
    iat: Math.floor(Date.now() / 1000),
    iss: issuer.getPublicKey(),
    name,
    sub: subject,
    nats: { ...nats, version: 2 },
  };
  claims.jti = base32(createHash("sha256").update(JSON.stringify(claims)).digest());
  const head = `${b64url(JSON.stringify({ typ: "JWT", alg: "ed25519-nkey" }))}.${b64url(JSON.stringify(claims))}`;
  return `${head}.${b64url(issuer.sign(new TextEncoder().encode(head)))}`;
}

export type JwtSetup = {
  /** nats-server config lines: the trusted operator and the preloaded account. */
  serverConfig: string;
  /** A .creds file for a user of the account with these permissions. */
  creds(name: string, permissions: { publish: string[]; subscribe: string[] }): string;
};

/** An operator, one account with JetStream (no limits) and the system account. */
export function jwtSetup(): JwtSetup {
  const operator = nkeys.createOperator();
  const account = nkeys.createAccount();
  const system = nkeys.createAccount(); // JetStream needs the server's system account
  const opJwt = sign(operator, operator.getPublicKey(), "fgw-test-operator", { type: "operator" });
  const unlimited = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 };
  const jetstream = { mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 };
  const accJwt = sign(operator, account.getPublicKey(), "fgw-test-account", { type: "account", limits: { ...unlimited, ...jetstream } });
  const sysJwt = sign(operator, system.getPublicKey(), "SYS", { type: "account", limits: unlimited });
  return {
    serverConfig: [
      `operator: ${JSON.stringify(opJwt)}`,
      `system_account: ${system.getPublicKey()}`,
      "resolver: MEMORY",
      "resolver_preload: {",
      `  ${account.getPublicKey()}: ${JSON.stringify(accJwt)}`,
      `  ${system.getPublicKey()}: ${JSON.stringify(sysJwt)}`,
      "}",
      "",
    ].join("\n"),
    creds(name, permissions) {
      const user = nkeys.createUser();
      const jwt = sign(account, user.getPublicKey(), name, {
        type: "user",
        pub: { allow: permissions.publish },
        sub: { allow: permissions.subscribe },
        subs: -1,
        data: -1,
        payload: -1,
      });
      const seed = new TextDecoder().decode(user.getSeed());
      return [
        "-----BEGIN NATS USER JWT-----",
        jwt,
        "------END NATS USER JWT------",
        "",
        "************************* IMPORTANT *************************",
        "NKEY Seed printed below can be used to sign and prove identity.",
        "",
        "-----BEGIN USER NKEY SEED-----",
        seed,
        "------END USER NKEY SEED------",
        "",
      ].join("\n");
    },
  };
}
