// A secured nats-server for the tests: a throwaway PKI made with the openssl CLI (CA, server certificate for
// 127.0.0.1/localhost, client certificate), and a server config with TLS and users whose permissions are the
// gateway's minimal list (gateway/AUTH.md, "Connecting to a secured NATS").
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { nkeys } from "@nats-io/transport-node";
import { startNatsServer, type NatsServerHandle } from "./nats-server.js";

export type TestPki = { dir: string; ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string; remove(): void };

/** True when the openssl CLI is on the PATH (the TLS tests need it). */
export function hasOpenssl(): boolean {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A CA and two certificates it signed (EC P-256, one day), in a temp dir. */
export function makeTestPki(): TestPki {
  const dir = mkdtempSync(join(tmpdir(), "fgw-pki-"));
  const f = (n: string) => join(dir, n);
  const ssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  const key = (out: string) => ssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", out);
  key(f("ca-key.pem"));
  ssl("req", "-x509", "-new", "-key", f("ca-key.pem"), "-days", "1", "-subj", "/CN=fgw test CA", "-out", f("ca.pem"));
  const leaf = (name: string, ext: string) => {
    key(f(`${name}-key.pem`));
    ssl("req", "-new", "-key", f(`${name}-key.pem`), "-subj", `/CN=fgw test ${name}`, "-out", f(`${name}.csr`));
    writeFileSync(f(`${name}.ext`), ext);
    ssl(
      "x509",
      "-req",
      "-in",
      f(`${name}.csr`),
      "-CA",
      f("ca.pem"),
      "-CAkey",
      f("ca-key.pem"),
      "-CAcreateserial",
      "-days",
      "1",
      "-extfile",
      f(`${name}.ext`),
      "-out",
      f(`${name}.pem`),
    );
  };
  leaf("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  leaf("client", "extendedKeyUsage=clientAuth\n");
  return {
    dir,
    ca: f("ca.pem"),
    serverCert: f("server.pem"),
    serverKey: f("server-key.pem"),
    clientCert: f("client.pem"),
    clientKey: f("client-key.pem"),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * The names a gateway uses on NATS (its settings). `namespaceStreams`: the streams of its namespaces
 * (NAMESPACES_FILE; `<STREAM_NAME>_<NAME>` unless a namespace names its own), each needing what the default
 * stream needs, and publishes under `<subjectPrefix>_ns`.
 */
export type GatewayNames = {
  stream: string;
  subjectPrefix: string;
  livePrefix: string;
  bucket: string;
  inboxPrefix?: string;
  controlPrefix?: string;
  namespaceStreams?: string[];
};

/**
 * The gateway's minimal NATS permissions, as gateway/AUTH.md lists them: what it publishes to (JetStream API
 * requests, acks, messages, presence records, control requests and their replies) and what it subscribes to (reply inboxes, live republished
 * messages, presence changes, stream advisories), for the default stream and every namespace stream. `omit`
 * takes subjects out (a test of a missing one).
 */
export function gatewayPermissions(n: GatewayNames, omit: string[] = []): { publish: string[]; subscribe: string[] } {
  const kv = `KV_${n.bucket}`;
  const ctl = n.controlPrefix ?? `${n.subjectPrefix}ctl`;
  const streams = [n.stream, ...(n.namespaceStreams ?? [])];
  const namespaced = (n.namespaceStreams ?? []).length > 0;
  const publish = [
    "$JS.API.INFO",
    ...streams.flatMap((s) => [
      `$JS.API.STREAM.INFO.${s}`,
      `$JS.API.STREAM.CREATE.${s}`,
      `$JS.API.STREAM.UPDATE.${s}`,
      `$JS.API.STREAM.MSG.GET.${s}`,
      `$JS.API.DIRECT.GET.${s}`,
      `$JS.API.CONSUMER.CREATE.${s}.>`,
      `$JS.API.CONSUMER.INFO.${s}.*`,
      `$JS.API.CONSUMER.MSG.NEXT.${s}.*`,
      `$JS.API.CONSUMER.NAMES.${s}`,
      `$JS.ACK.${s}.>`,
    ]),
    `${n.subjectPrefix}.>`,
    ...(namespaced ? [`${n.subjectPrefix}_ns.>`] : []),
    `$JS.API.STREAM.INFO.${kv}`,
    `$JS.API.STREAM.CREATE.${kv}`,
    `$JS.API.STREAM.UPDATE.${kv}`,
    `$JS.API.DIRECT.GET.${kv}`,
    `$KV.${n.bucket}.>`,
    `${ctl}.>`,
    `${n.inboxPrefix ?? "_INBOX"}.>`,
  ].filter((s) => !omit.includes(s));
  const subscribe = [
    `${n.inboxPrefix ?? "_INBOX"}.>`,
    `${n.livePrefix}.>`,
    `${ctl}.>`,
    `fgwpresence.${n.bucket}.>`,
    ...streams.flatMap((s) => [
      `$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.${s}`,
      `$JS.EVENT.ADVISORY.STREAM.CREATED.${s}`,
      `$JS.EVENT.ADVISORY.STREAM.UPDATED.${s}`,
      `$JS.EVENT.ADVISORY.STREAM.DELETED.${s}`,
    ]),
    `$JS.EVENT.ADVISORY.STREAM.UPDATED.${kv}`,
    `$JS.EVENT.ADVISORY.STREAM.DELETED.${kv}`,
  ].filter((s) => !omit.includes(s));
  return { publish, subscribe };
}

export type SecureUser = { user: string; password: string } | { nkey: string };

/** nats-server config: TLS with the test PKI (client certificates verified when `verify`), and the users. */
export function secureServerConfig(
  pki: TestPki,
  users: { who: SecureUser; permissions?: { publish: string[]; subscribe: string[] } }[],
  opts: { verify?: boolean; handshakeFirst?: boolean } = {},
): string {
  return [tlsBlock(pki, opts), authorizationBlock(users)].join("\n");
}

/** The server's `authorization {}` block: its users, each with its permissions (none: everything). */
export function authorizationBlock(users: readonly SecureUserSpec[]): string {
  const q = (s: string) => JSON.stringify(s);
  const list = (xs: string[]) => `[${xs.map(q).join(", ")}]`;
  const user = (u: SecureUserSpec) => {
    const who = "nkey" in u.who ? `nkey: ${q(u.who.nkey)}` : `user: ${q(u.who.user)}, password: ${q(u.who.password)}`;
    const perms = u.permissions
      ? `, permissions: { publish: { allow: ${list(u.permissions.publish)} }, subscribe: { allow: ${list(u.permissions.subscribe)} } }`
      : "";
    return `    { ${who}${perms} }`;
  };
  return ["authorization {", "  users = [", users.map(user).join(",\n"), "  ]", "}", ""].join("\n");
}

/** The server's `tls {}` block with the test PKI. */
export function tlsBlock(pki: TestPki, opts: { verify?: boolean; handshakeFirst?: boolean } = {}): string {
  const q = (s: string) => JSON.stringify(s);
  return [
    "tls {",
    `  cert_file: ${q(pki.serverCert)}`,
    `  key_file: ${q(pki.serverKey)}`,
    `  ca_file: ${q(pki.ca)}`,
    `  verify: ${opts.verify ? "true" : "false"}`,
    ...(opts.handshakeFirst ? ["  handshake_first: true"] : []),
    "  timeout: 5",
    "}",
  ].join("\n");
}

/** One user of a secured server (`permissions` undefined: everything). */
export type SecureUserSpec = { who: SecureUser; permissions?: { publish: string[]; subscribe: string[] } };

/** A secured nats-server for one test file, with what its tests need around it; `stop()` removes it all. */
export type SecureNats = {
  pki: TestPki;
  server: NatsServerHandle;
  /** An nkey user made for the file: `users` gets its public key, a test its seed. */
  nkeyUser: ReturnType<typeof nkeys.createUser>;
  /** Writes `value` to a file readable by its owner only, in a temp dir of the fixture; the file's path. */
  secret(name: string, value: string): string;
  /** The gateway's client certificate settings for this PKI (NATS_TLS_CA_FILE, _CERT_FILE, _KEY_FILE). */
  tlsEnv(): Record<string, string>;
  stop(): Promise<void>;
};

/** Makes a PKI, a secrets dir and an nkey user, and starts nats-server with TLS and the users `users` lists. */
export async function startSecureNats(
  users: (nkeyPublic: string) => SecureUserSpec[],
  opts: { verify?: boolean; handshakeFirst?: boolean } = {},
): Promise<SecureNats> {
  const pki = makeTestPki();
  const secrets = mkdtempSync(join(tmpdir(), "fgw-secrets-"));
  const nkeyUser = nkeys.createUser();
  const remove = () => {
    pki.remove();
    rmSync(secrets, { recursive: true, force: true });
  };
  let server: NatsServerHandle;
  try {
    server = await startNatsServer({ config: secureServerConfig(pki, users(nkeyUser.getPublicKey()), opts) });
  } catch (e) {
    remove();
    throw e;
  }
  return {
    pki,
    server,
    nkeyUser,
    secret(name, value) {
      const f = join(secrets, name);
      writeFileSync(f, value, { mode: 0o600 });
      return f;
    },
    tlsEnv: () => ({ NATS_TLS_CA_FILE: pki.ca, NATS_TLS_CERT_FILE: pki.clientCert, NATS_TLS_KEY_FILE: pki.clientKey }),
    async stop() {
      await server.stop();
      remove();
    },
  };
}
