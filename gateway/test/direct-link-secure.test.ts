// The direct-get link against a real nats-server with TLS (client certificates verified) and users whose
// permissions are the gateway's minimal list: the link upgrades to TLS after the INFO (or starts with it when
// the server wants the handshake first), authenticates as the main connection does (password, nkey), reads the
// same messages as nats.js, and a link that cannot connect says so once at warn while reads use nats.js.
import { Writable } from "node:stream";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { pino } from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { gatewayPermissions, hasOpenssl, makeTestPki, secureServerConfig, startSecureNats, type SecureNats, type TestPki } from "#testkit/nats-secure.js";
import { waitFor } from "#testkit/wait.js";
import { DirectGet, type DirectBatch } from "../src/broker/jetstream/direct/direct-get.js";
import { DirectLink } from "../src/broker/jetstream/direct/direct-link.js";
import { loadNatsSecurity, natsJsOptions, type NatsSecurity } from "../src/broker/jetstream/nats-security.js";
import type { NatsSecuritySection } from "../src/config/sections/index.js";

const COUNT = 1_200;
const NAMES = { stream: "DLS", subjectPrefix: "dls", livePrefix: "dlslive", bucket: "DLSP" };
let fixture: SecureNats | undefined;
let pki: TestPki;
let nats: NatsServerHandle;
let admin: NatsConnection;

const section = (over: Partial<NatsSecuritySection>): NatsSecuritySection => ({
  credsFile: "",
  nkeySeedFile: "",
  user: "",
  passwordFile: "",
  tokenFile: "",
  tlsCaFile: pki.ca,
  tlsCertFile: pki.clientCert,
  tlsKeyFile: pki.clientKey,
  tlsFirst: false,
  ...over,
});
const secret = (name: string, value: string): string => fixture!.secret(name, value);

/** A logger whose warn and error lines are kept. */
function capturingLog(): { log: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const out = new Writable({
    write(chunk: Buffer, _e, cb) {
      for (const l of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { log: pino({ level: "warn" }, out), lines };
}

async function readAll(dg: DirectGet, subject: string): Promise<DirectBatch["messages"]> {
  const out: DirectBatch["messages"] = [];
  for (let seq = 1; ;) {
    const b = await dg.batch({ seq, subject, batch: 500, maxBytes: 64 * 1024 });
    out.push(...b.messages);
    if (b.pending === 0 || b.messages.length === 0) return out;
    seq = b.messages.at(-1)!.seq + 1;
  }
}

/** The server's view of the connection named `name`: TLS version, user, messages sent to it. */
async function conn(server: NatsServerHandle, name: string): Promise<{ tls_version?: string; authorized_user?: string; out_msgs: number } | undefined> {
  const r = (await (await fetch(`http://127.0.0.1:${server.monitorPort}/connz?auth=1&limit=1000`)).json()) as {
    connections: { name?: string; tls_version?: string; authorized_user?: string; out_msgs: number }[];
  };
  return r.connections.find((c) => c.name === name);
}

/** A DirectGet on `nc` whose fast path is a DirectLink with `security`. */
function linked(nc: NatsConnection, server: NatsServerHandle, name: string, security: NatsSecurity, log: pino.Logger, keep: { link?: DirectLink }) {
  return new DirectGet(nc, NAMES.stream, {
    fast: (sink) => {
      keep.link = new DirectLink({ server: () => `127.0.0.1:${server.port}`, name, sink, log, security, backoffMs: [50, 200] });
      keep.link.start();
      return keep.link;
    },
  });
}

describe.skipIf(!hasOpenssl())("direct-get link on a secured NATS", () => {
  beforeAll(async () => {
    const perms = gatewayPermissions(NAMES);
    fixture = await startSecureNats(
      (nkey) => [
        { who: { user: "admin", password: "admin-pw" } },
        { who: { user: "gw", password: "gw-pw" }, permissions: perms },
        { who: { nkey }, permissions: perms },
      ],
      { verify: true },
    );
    ({ pki, server: nats } = fixture);
    const adminSec = loadNatsSecurity(section({ user: "admin", passwordFile: secret("admin-pw", "admin-pw\n") }));
    admin = await connect({ servers: nats.url, ...natsJsOptions(adminSec) });
    await (await jetstreamManager(admin)).streams.add({ name: NAMES.stream, subjects: [`${NAMES.subjectPrefix}.>`], allow_direct: true });
    const js = jetstream(admin);
    for (let i = 0; i < COUNT; i += 400)
      await Promise.all(Array.from({ length: 400 }, (_, k) => js.publish(`dls.c${(i + k) % 3}`, JSON.stringify({ n: i + k }))));
  });
  afterAll(async () => {
    await admin?.close();
    await fixture?.stop();
  });

  for (const [how, over] of [
    ["user and password", () => ({ user: "gw", passwordFile: secret("gw-pw", "gw-pw\n") })],
    ["nkey", () => ({ nkeySeedFile: secret("gw.nk", new TextDecoder().decode(fixture!.nkeyUser.getSeed()) + "\n") })],
  ] as const) {
    it(`direct link — TLS with a client certificate and ${how}: ready, and the same messages as nats.js over its own TLS connection`, async () => {
      const security = loadNatsSecurity(section(over()));
      const nc = await connect({ servers: nats.url, ...natsJsOptions(security) });
      const { log, lines } = capturingLog();
      const keep: { link?: DirectLink } = {};
      const name = `dls-${security.method}`;
      const dg = linked(nc, nats, name, security, log, keep);
      try {
        await waitFor(() => keep.link?.ready, { what: "link ready" });
        const viaLink = await readAll(dg, "dls.>");
        const plain = new DirectGet(nc, NAMES.stream);
        const viaNatsJs = await readAll(plain, "dls.>");
        plain.close();
        expect(viaLink.length).toBe(COUNT);
        const view = (ms: typeof viaLink) => ms.map((m) => `${m.seq} ${m.subject} ${Buffer.from(m.payload).toString("utf8")}`);
        expect(view(viaLink)).toEqual(view(viaNatsJs));
        const c = await conn(nats, name);
        expect(c?.tls_version).toMatch(/^1\.[23]$/);
        expect(c?.authorized_user).toBe(security.method === "nkey" ? fixture!.nkeyUser.getPublicKey() : "gw");
        expect(c!.out_msgs).toBeGreaterThanOrEqual(COUNT);
        expect(lines).toEqual([]);
        // Closing the link closes the TLS socket and the connection under it.
        dg.close();
        await waitFor(async () => (await conn(nats, name)) === undefined, { what: "the link's connection gone from connz" });
      } finally {
        dg.close();
        await nc.close();
      }
    });
  }

  it("direct link — a wrong password: the link stays down, says why once at warn, and reads go through nats.js", async () => {
    const good = loadNatsSecurity(section({ user: "gw", passwordFile: secret("gw-pw2", "gw-pw") }));
    const bad = loadNatsSecurity(section({ user: "gw", passwordFile: secret("bad-pw", "nope") }));
    const nc = await connect({ servers: nats.url, ...natsJsOptions(good) });
    const { log, lines } = capturingLog();
    const keep: { link?: DirectLink } = {};
    const dg = linked(nc, nats, "dls-bad", bad, log, keep);
    try {
      // Several attempts (backoff 50-200 ms), one warning.
      await waitFor(() => (keep.link?.attempts ?? 0) >= 4, { what: "four attempts" });
      expect(keep.link!.ready).toBe(false);
      expect(keep.link!.connects).toBe(0);
      const warned = lines.filter((l) => /direct-get connection failed/.test(String(l.msg)));
      expect(warned).toHaveLength(1);
      expect(String(warned[0]!.why)).toMatch(/authorization violation/i);
      expect((await readAll(dg, "dls.c1")).length).toBe(COUNT / 3);
    } finally {
      dg.close();
      await nc.close();
    }
  });

  it("direct link — the server's certificate is not signed by NATS_TLS_CA_FILE: no link, one warning naming the certificate problem", async () => {
    const other = makeTestPki();
    try {
      const good = loadNatsSecurity(section({ user: "gw", passwordFile: secret("gw-pw3", "gw-pw") }));
      const wrongCa = loadNatsSecurity({ ...section({ user: "gw", passwordFile: secret("gw-pw4", "gw-pw") }), tlsCaFile: other.ca });
      const nc = await connect({ servers: nats.url, ...natsJsOptions(good) });
      const { log, lines } = capturingLog();
      const keep: { link?: DirectLink } = {};
      const dg = linked(nc, nats, "dls-ca", wrongCa, log, keep);
      await waitFor(() => lines.find((l) => /direct-get connection failed/.test(String(l.msg))), { what: "the warning" });
      expect(String(lines[0]!.why)).toMatch(/certificate/i);
      expect(keep.link!.ready).toBe(false);
      dg.close();
      await nc.close();
    } finally {
      other.remove();
    }
  });

  it("direct link — a server that wants the TLS handshake first (NATS_TLS_FIRST): ready over TLS", async () => {
    const first = await startNatsServer({
      config: secureServerConfig(pki, [{ who: { user: "gw", password: "gw-pw" }, permissions: gatewayPermissions(NAMES) }], { handshakeFirst: true }),
    });
    try {
      const security = loadNatsSecurity(section({ user: "gw", passwordFile: secret("gw-pw5", "gw-pw"), tlsFirst: true }));
      const nc = await connect({ servers: first.url, ...natsJsOptions(security) });
      await (await jetstreamManager(nc)).streams.add({ name: NAMES.stream, subjects: [`${NAMES.subjectPrefix}.>`], allow_direct: true });
      await jetstream(nc).publish("dls.x", "one");
      const { log, lines } = capturingLog();
      const keep: { link?: DirectLink } = {};
      const dg = linked(nc, first, "dls-first", security, log, keep);
      await waitFor(() => keep.link?.ready, { what: "link ready" });
      expect((await dg.batch({ seq: 1, subject: "dls.>", batch: 10 })).messages).toHaveLength(1);
      expect((await conn(first, "dls-first"))?.tls_version).toMatch(/^1\.[23]$/);
      expect(lines).toEqual([]);
      dg.close();
      await nc.close();
    } finally {
      await first.stop();
    }
  });
});
