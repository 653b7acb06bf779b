// The gateway against a secured nats-server: TLS with verified client certificates, and a user whose
// permissions are exactly the minimal list of gateway/AUTH.md (gateway/testkit/nats-secure.ts). Publish, live
// delivery, replay (on the direct-get link, over TLS), a durable with acks and presence work end to end over
// WebSocket; the same with an nkey user and with a .creds file of a NATS account (operator mode, JWTs made by
// gateway/testkit/nats-jwt.ts); with a namespace, whose stream needs the same subjects again; a user missing one subject
// of the list fails loudly, not silently.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { CLI, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { gatewayPermissions, hasOpenssl, startSecureNats, tlsBlock, type SecureNats, type TestPki } from "#testkit/nats-secure.js";
import { jwtSetup } from "#testkit/nats-jwt.js";
import { httpPublish } from "#testkit/ws-client.js";
import { ClientPool, uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { metric, type Labels } from "#testkit/metrics.js";

const NAMES = { stream: "SECURE", subjectPrefix: "sec", livePrefix: "seclive", bucket: "SECPRES" };
const GW_ARGS = ["--stream-name", NAMES.stream, "--subject-prefix", NAMES.subjectPrefix, "--presence-bucket", NAMES.bucket, "--presence-ttl", "2s"];
let fixture: SecureNats | undefined;
let pki: TestPki;
let nats: NatsServerHandle;
let gw: GatewayHandle | undefined;
const clients = new ClientPool(() => gw!.wsUrl);
const uniq = uniqueNames();

const secret = (name: string, value: string): string => fixture!.secret(name, value);
const tlsEnv = (): Record<string, string> => fixture!.tlsEnv();
const nkeySeed = (): string => new TextDecoder().decode(fixture!.nkeyUser.getSeed());
const nkeyPublic = (): string => fixture!.nkeyUser.getPublicKey();
const LINK = ["fanout_direct_gets_total", { via: "link" }] as const;
const MAIN = ["fanout_direct_gets_total", { via: "main" }] as const;
const UP = ["fanout_direct_link_up"] as const;
const sample = (g: GatewayHandle, [name, labels]: readonly [string, Labels?]): Promise<number> => metric(g.metricsUrl, name, labels);

/** Users on the server: one per way in, each with the gateway's minimal permissions (`lacking` takes one out). */
const LACKING = `${NAMES.livePrefix}.>`;
const NO_STREAM_INFO = `$JS.API.STREAM.INFO.${NAMES.stream}`;
/** A namespace (`chat`, its own stream SECURE_CHAT under sec_ns.chat.>) and the user granted its subjects too. */
const NS_NAMES = { ...NAMES, namespaceStreams: [`${NAMES.stream}_CHAT`] };
const namespacesFile = (): string => secret("namespaces.yaml", "namespaces:\n  chat:\n    maxAge: 1h\n");
beforeAll(async () => {
  if (!hasOpenssl()) return;
  const perms = gatewayPermissions(NAMES);
  fixture = await startSecureNats(
    (nkey) => [
      { who: { user: "gw", password: "gw-pw" }, permissions: perms },
      { who: { nkey }, permissions: perms },
      { who: { user: "lacking", password: "lacking-pw" }, permissions: gatewayPermissions(NAMES, [LACKING]) },
      { who: { user: "nostream", password: "nostream-pw" }, permissions: gatewayPermissions(NAMES, [NO_STREAM_INFO]) },
      { who: { user: "nsgw", password: "nsgw-pw" }, permissions: gatewayPermissions(NS_NAMES) },
    ],
    { verify: true },
  );
  ({ pki, server: nats } = fixture);
}, 30_000);
afterAll(async () => {
  clients.closeAll();
  await gw?.stop();
  await fixture?.stop();
});

describe.skipIf(!hasOpenssl())("secured NATS — TLS and credentials", () => {
  it("secured NATS — with TLS and user/password limited to the minimal permissions: publish, live, replay on the link, durable and presence work", async () => {
    gw = await startGateway({
      natsUrl: nats.url,
      workers: 1,
      args: GW_ARGS,
      env: { ...tlsEnv(), NATS_USER: "gw", NATS_PASSWORD_FILE: secret("gw-pw", "gw-pw\n") },
    });
    expect(JSON.stringify(gw.logs)).not.toContain("gw-pw");
    await waitFor(async () => (await sample(gw!, UP)) === 1 || undefined, { what: "the direct-get link up over TLS" });

    // Live: a subscriber gets what is published after it subscribed.
    const ch = uniq("room.");
    const live = await clients.open();
    await live.sub(ch);
    for (let i = 0; i < 20; i++) expect((await httpPublish(gw.url, ch, { i })).status).toBe(201);
    const got = await live.waitForMsgs(20);
    expect(got.map((m) => (m.data as { i: number }).i)).toEqual([...Array(20).keys()]);

    // Replay: read on the link (direct gets via="link"), none on the main connection.
    const [link0, main0] = [await sample(gw, LINK), await sample(gw, MAIN)];
    const late = await clients.open();
    await late.sub(ch, { from: "all" });
    expect((await late.waitForMsgs(20)).map((m) => m.seq)).toEqual(got.map((m) => m.seq));
    expect(await sample(gw, LINK)).toBeGreaterThan(link0);
    expect(await sample(gw, MAIN)).toBe(main0);

    // Durable with acks (consumer create, info, pull, ack).
    const dch = uniq("orders.");
    const d = await clients.open();
    expect(await d.sub(dch, { durable: "secure-d", ack: true })).toMatchObject({ op: "ok", durable: "secure-d" });
    await httpPublish(gw.url, dch, { v: 1 });
    const [m] = await d.waitForMsgs(1);
    expect(m).toMatchObject({ channel: dch, data: { v: 1 } });
    expect((await d.request({ op: "ack", seq: m!.seq })).op).toBe("ok");

    // Presence (the KV bucket: records, snapshot reads, the republished changes).
    const pch = uniq("lobby.");
    const watcher = await clients.open();
    const member = await clients.open();
    await watcher.sub(pch, { presence: "watch" });
    const id = (await member.sub(pch, { presence: true })).client as string;
    await waitFor(() => watcher.frames.find((f) => f.op === "join" && f.client === id), { what: "join event" });
    const r = await watcher.request({ op: "presence", channel: pch });
    expect((r.members as { client: string }[]).map((x) => x.client)).toContain(id);

    // The control plane (its subjects, replies to the door's inbox): the live and the replaying subscriber.
    const occ = await (await fetch(`${gw.url}/v1/server/occupancy?channel=${ch}`)).json();
    expect(occ).toMatchObject({ channel: ch, subscribers: 2, workers: 1, complete: true });

    expect(gw.logs.filter((l) => (l.level ?? 0) >= 40 && !/AUTHENTICATION IS OFF/.test(String(l.msg))).map((l) => l.msg)).toEqual([]);
    clients.closeAll();
    await gw.stop();
    gw = undefined;
  });

  it("secured NATS — an nkey user (NATS_NKEY_SEED_FILE): the gateway and its direct-get link sign the server's nonce", async () => {
    gw = await startGateway({
      natsUrl: nats.url,
      workers: 1,
      args: GW_ARGS,
      env: { ...tlsEnv(), NATS_NKEY_SEED_FILE: secret("gw.nk", nkeySeed()) },
    });
    await waitFor(async () => (await sample(gw!, UP)) === 1 || undefined, { what: "the direct-get link up" });
    const ch = uniq("nk.");
    for (let i = 0; i < 5; i++) await httpPublish(gw.url, ch, { i });
    const c = await clients.open();
    await c.sub(ch, { from: "all" });
    expect(await c.waitForMsgs(5)).toHaveLength(5);
    const connz = (await (await fetch(`http://127.0.0.1:${nats.monitorPort}/connz?auth=1`)).json()) as {
      connections: { name?: string; authorized_user?: string }[];
    };
    const mine = connz.connections.filter((x) => x.name?.startsWith("fanout-gateway-worker") && x.authorized_user === nkeyPublic());
    expect(mine.map((x) => x.name).sort()).toEqual(["fanout-gateway-worker-1", "fanout-gateway-worker-1-direct"]);
    for (const x of mine) expect(x.authorized_user).toBe(nkeyPublic());
    clients.closeAll();
    await gw.stop();
    gw = undefined;
  });

  it("secured NATS — NATS accounts (operator mode): a .creds file (NATS_CREDS_FILE) whose user JWT carries the minimal permissions, on the main connection and the link", async () => {
    const jwt = jwtSetup();
    const accounts = await startNatsServer({ config: `${tlsBlock(pki, { verify: true })}\n${jwt.serverConfig}` });
    try {
      gw = await startGateway({
        natsUrl: accounts.url,
        workers: 1,
        args: GW_ARGS,
        env: { ...tlsEnv(), NATS_CREDS_FILE: secret("gw.creds", jwt.creds("fgw-gateway", gatewayPermissions(NAMES))) },
      });
      await waitFor(async () => (await sample(gw!, UP)) === 1 || undefined, { what: "the direct-get link up" });
      const ch = uniq("acct.");
      for (let i = 0; i < 5; i++) expect((await httpPublish(gw.url, ch, { i })).status).toBe(201);
      const link0 = await sample(gw, LINK);
      const c = await clients.open();
      await c.sub(ch, { from: "all" });
      expect((await c.waitForMsgs(5)).map((m) => (m.data as { i: number }).i)).toEqual([0, 1, 2, 3, 4]);
      expect(await sample(gw, LINK)).toBeGreaterThan(link0);
      const connz = (await (await fetch(`http://127.0.0.1:${accounts.monitorPort}/connz?auth=1`)).json()) as {
        connections: { name?: string; name_tag?: string; account?: string; tls_version?: string }[];
      };
      const mine = connz.connections.filter((x) => x.name?.startsWith("fanout-gateway-worker"));
      expect(mine.map((x) => x.name).sort()).toEqual(["fanout-gateway-worker-1", "fanout-gateway-worker-1-direct"]);
      for (const x of mine) expect(x).toMatchObject({ name_tag: "fgw-test-account", tls_version: expect.stringMatching(/^1\.[23]$/) });
      clients.closeAll();
      await gw.stop();
      gw = undefined;
    } finally {
      await accounts.stop();
    }
  });

  it(`secured NATS — a user lacking one subject of the list (subscribe ${LACKING}): a live subscription fails with an error, and the log names the subject`, async () => {
    gw = await startGateway({
      natsUrl: nats.url,
      workers: 1,
      args: GW_ARGS,
      env: { ...tlsEnv(), NATS_USER: "lacking", NATS_PASSWORD_FILE: secret("lacking-pw", "lacking-pw") },
    });
    const c = await clients.open();
    const r = await c.request({ op: "sub", channel: uniq("deny.") });
    const logged = await waitFor(() => gw!.logs.find((l) => /NATS refused the live subscription/.test(String(l.msg))), {
      what: "the error naming the denied subject",
    });
    expect(logged.level).toBe(50);
    expect(String(logged.subject)).toMatch(new RegExp(`^${NAMES.livePrefix}\\.deny\\.`));
    expect(JSON.stringify(logged.err)).toMatch(/Permissions Violation for Subscription/);
    expect(r).toMatchObject({ op: "err", code: "broker_error", temporary: false });
    expect(String(r.message)).toMatch(/Permissions Violation/i);
    clients.closeAll();
    await gw.stop();
    gw = undefined;
  });
});

describe.skipIf(!hasOpenssl())("secured NATS — namespaces", () => {
  it("secured NATS — a gateway with a namespace, on a user granted the minimal list for both streams: publish, live, history, resume on the link, durable and presence on the namespace's channel", async () => {
    gw = await startGateway({
      natsUrl: nats.url,
      workers: 1,
      args: GW_ARGS,
      env: { ...tlsEnv(), NATS_USER: "nsgw", NATS_PASSWORD_FILE: secret("nsgw-pw", "nsgw-pw"), NAMESPACES_FILE: namespacesFile() },
    });
    // Up only when every stream's link is: the default stream's and chat's.
    await waitFor(async () => (await sample(gw!, UP)) === 1 || undefined, { what: "the direct-get links up over TLS" });
    const ch = uniq("chat.room");
    const live = await clients.open();
    await live.sub(ch);
    const seqs: number[] = [];
    for (let i = 0; i < 10; i++) {
      const r = await httpPublish(gw.url, ch, { i });
      expect(r.status).toBe(201);
      seqs.push(r.body.seq as number);
    }
    const viaWs = await live.request({ op: "pub", channel: ch, data: { i: 10 } });
    expect(viaWs.op).toBe("ok");
    seqs.push(viaWs.seq as number);
    // Numbered by the namespace's stream: it held nothing before.
    expect(seqs).toEqual([...Array(11).keys()].map((i) => i + 1));
    expect((await live.waitForMsgs(11)).map((m) => m.seq)).toEqual(seqs);

    const h = (await (await fetch(`${gw.url}/v1/channels/${encodeURIComponent(ch)}/messages?from_seq=3`)).json()) as { messages: { seq: number }[] };
    expect(h.messages.map((m) => m.seq)).toEqual(seqs.slice(2));
    const [link0, main0] = [await sample(gw, LINK), await sample(gw, MAIN)];
    const resumer = await clients.open();
    await resumer.sub(ch, { from: { seq: 5 } });
    expect((await resumer.waitForMsgs(7)).map((m) => m.seq)).toEqual(seqs.slice(4));
    expect(await sample(gw, LINK)).toBeGreaterThan(link0);
    expect(await sample(gw, MAIN)).toBe(main0);

    const d = await clients.open();
    expect(await d.sub(uniq("chat.jobs"), { durable: "secure-ns", ack: true })).toMatchObject({ op: "ok" });
    const member = await clients.open();
    const id = (await member.sub(ch, { presence: true })).client as string;
    const listed = await member.request({ op: "presence", channel: ch });
    expect((listed.members as { client: string }[]).map((x) => x.client)).toEqual([id]);

    const connz = (await (await fetch(`http://127.0.0.1:${nats.monitorPort}/connz?auth=1`)).json()) as {
      connections: { name?: string; authorized_user?: string }[];
    };
    const mine = connz.connections.filter((x) => x.name?.startsWith("fanout-gateway-worker") && x.authorized_user === "nsgw");
    expect(mine.map((x) => x.name).sort()).toEqual(["fanout-gateway-worker-1", "fanout-gateway-worker-1-direct", "fanout-gateway-worker-1-direct-chat"]);
    expect(gw.logs.filter((l) => (l.level ?? 0) >= 40 && !/AUTHENTICATION IS OFF/.test(String(l.msg))).map((l) => l.msg)).toEqual([]);
    clients.closeAll();
    await gw.stop();
    gw = undefined;
  });

  it(`secured NATS — a user granted only the default stream's subjects: a gateway with a namespace exits 1 at start naming the namespace stream's subject`, () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--workers", "1", ...GW_ARGS], {
      encoding: "utf8",
      timeout: 30_000,
      env: {
        ...process.env,
        ...tlsEnv(),
        NATS_URL: nats.url,
        NATS_USER: "gw",
        NATS_PASSWORD_FILE: secret("gw-pw2", "gw-pw"),
        NAMESPACES_FILE: namespacesFile(),
      },
    });
    expect(r.status).toBe(1);
    expect(r.stdout + r.stderr).toContain(`Permissions Violation for Publish to \\"$JS.API.STREAM.INFO.${NAMES.stream}_CHAT\\"`);
  });
});

describe.skipIf(!hasOpenssl())("secured NATS — a user that may not read the stream", () => {
  it(`secured NATS — without ${NO_STREAM_INFO} the gateway exits 1 at start and says Permissions Violation for it`, () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--workers", "1", ...GW_ARGS], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, ...tlsEnv(), NATS_URL: nats.url, NATS_USER: "nostream", NATS_PASSWORD_FILE: secret("nostream-pw", "nostream-pw") },
    });
    expect(r.status).toBe(1);
    expect(r.stdout + r.stderr).toContain(`Permissions Violation for Publish to \\"${NO_STREAM_INFO}\\"`);
  });

  it("secured NATS — a wrong password: the gateway exits 1 at start with Authorization Violation (not a silent retry loop)", () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--workers", "1", ...GW_ARGS], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, ...tlsEnv(), NATS_URL: nats.url, NATS_USER: "gw", NATS_PASSWORD_FILE: secret("wrong-pw", "not-the-pw-Zq9x") },
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/"level":60.*Authorization Violation/);
    expect(r.stdout + r.stderr).not.toContain("Zq9x");
  });
});

describe("secured NATS — bad settings stop the gateway", () => {
  const run = (env: Record<string, string>) => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--workers", "1"], { encoding: "utf8", timeout: 20_000, env: { ...process.env, ...env } });
    return { status: r.status, out: r.stdout + r.stderr };
  };
  const dir = mkdtempSync(join(tmpdir(), "fgw-badsec-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("secured NATS — a user without its password file exits 1 naming NATS_PASSWORD_FILE", () => {
    const r = run({ NATS_URL: "nats://127.0.0.1:1", NATS_USER: "gw" });
    expect(r.status).toBe(1);
    expect(r.out).toContain("invalid NATS_PASSWORD_FILE (--nats-password-file)");
  });

  it("secured NATS — a seed file that holds no seed exits 1 naming NATS_NKEY_SEED_FILE, without printing its content", () => {
    const f = join(dir, "bad.nk");
    writeFileSync(f, "SUtotallysecretbutwrong\n");
    const r = run({ NATS_URL: "nats://127.0.0.1:1", NATS_NKEY_SEED_FILE: f });
    expect(r.status).toBe(1);
    expect(r.out).toContain("invalid NATS_NKEY_SEED_FILE (--nats-nkey-seed-file)");
    expect(r.out).not.toContain("totallysecret");
  });

  it("secured NATS — credentials without NATS_URL (the embedded server) exit 1 naming the setting", () => {
    const f = join(dir, "token");
    writeFileSync(f, "t0ken");
    const r = run({ NATS_TOKEN_FILE: f });
    expect(r.status).toBe(1);
    expect(r.out).toContain("invalid NATS_TOKEN_FILE (--nats-token-file): has no effect without NATS_URL");
  });
});
