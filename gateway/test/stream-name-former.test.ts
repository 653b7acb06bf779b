// The channel stream's default name became FANOUT_CHANNELS (it was EVENTS). A deployment whose store was made
// by the old default and that sets no STREAM_NAME keeps its stream and its messages: a nats-server store written
// by the real CLI with STREAM_NAME=EVENTS (as the old default made it, a namespace stream EVENTS_CHAT beside it),
// the server restarted on it, and the CLI started again without STREAM_NAME: its workers replay the old messages
// from seq 1 over WebSocket and HTTP, it makes no new stream and says once, at info, what it kept; a fresh store
// gets FANOUT_CHANNELS.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "@nats-io/transport-node";
import { jetstreamManager } from "@nats-io/jetstream";
import { startGateway, type GatewayHandle, type GatewayOptions } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { authorizationBlock, gatewayPermissions } from "#testkit/nats-secure.js";
import { httpPublish, TestClient, type MsgFrame } from "#testkit/ws-client.js";

const KEPT = "STREAM_NAME is not set";
let dir: string;
let namespacesFile: string;
const gateways: GatewayHandle[] = [];
const clients: TestClient[] = [];
const servers: NatsServerHandle[] = [];

const server = async (config?: string): Promise<NatsServerHandle> => {
  const s = await startNatsServer(config ? { config } : {});
  servers.push(s);
  return s;
};

/** The streams on the server, sorted. */
async function streamNames(nats: NatsServerHandle): Promise<string[]> {
  const nc = await connect({ servers: nats.url });
  try {
    const names: string[] = [];
    for await (const n of (await jetstreamManager(nc)).streams.names()) names.push(n);
    return names.sort();
  } finally {
    await nc.close();
  }
}

const start = async (opts: GatewayOptions): Promise<GatewayHandle> => {
  const gw = await startGateway({ workers: 2, logLevel: "info", ...opts, env: { NAMESPACES_FILE: namespacesFile, ...opts.env } });
  gateways.push(gw);
  return gw;
};

/** Every stored message of `channel` from seq 1, through a WebSocket `sub` with `from:{seq:1}`. */
async function resumeFromOne(gw: GatewayHandle, channel: string, count: number): Promise<MsgFrame[]> {
  const c = await TestClient.connect(gw.wsUrl);
  clients.push(c);
  const ok = await c.sub(channel, { from: { seq: 1 } });
  expect(ok.truncated).toBeUndefined();
  return (await c.waitForMsgs(count)).filter((m) => m.channel === channel);
}

const history = async (gw: GatewayHandle, channel: string): Promise<{ seq: number; data: unknown }[]> => {
  const r = await fetch(`${gw.url}/v1/channels/${encodeURIComponent(channel)}/messages?from_seq=1`);
  expect(r.status).toBe(200);
  return ((await r.json()) as { messages: { seq: number; data: unknown }[] }).messages;
};

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "fgw-stream-name-"));
  namespacesFile = join(dir, "namespaces.yaml");
  writeFileSync(namespacesFile, "namespaces:\n  chat: {}\n");
});
afterAll(async () => {
  for (const c of clients) c.close();
  await Promise.all(gateways.map((g) => g.stop()));
  await Promise.all(servers.map((s) => s.stop()));
  rmSync(dir, { recursive: true, force: true });
});

describe("stream name — a store made by the old default EVENTS", () => {
  it("stream name — a gateway without STREAM_NAME on a store of before keeps EVENTS (and EVENTS_CHAT): the old messages replay from seq 1", async () => {
    const nats = await server();
    const old = await start({ natsUrl: nats.url, env: { STREAM_NAME: "EVENTS" } });
    const stored: number[] = [];
    for (const [channel, i] of [
      ["orders.eu", 1],
      ["orders.eu", 2],
      ["chat.room", 3],
      ["orders.eu", 4],
    ] as const) {
      const r = await httpPublish(old.url, channel, { i });
      expect(r.status).toBe(201);
      stored.push(r.body.seq as number);
    }
    expect(stored).toEqual([1, 2, 1, 3]);
    expect(await old.stop()).toBe(0);
    const made = await streamNames(nats);
    expect(made).toContain("EVENTS");
    expect(made).toContain("EVENTS_CHAT");
    // The store as the old gateway left it, read again by a new server process.
    await nats.kill();
    await nats.restart();

    const gw = await start({ natsUrl: nats.url });
    const kept = gw.logs.filter((l) => l.msg?.startsWith(KEPT));
    expect(kept).toHaveLength(1);
    expect(kept[0]).toMatchObject({ level: 30, role: "primary", stream: "EVENTS", default: "FANOUT_CHANNELS" });
    expect(kept[0]!.msg).toContain("set STREAM_NAME=EVENTS to make that explicit");
    expect(gw.logs.find((l) => l.msg === "default stream settings")).toMatchObject({ stream: "EVENTS" });
    expect(gw.logs.filter((l) => l.msg === "stream created")).toEqual([]);

    // The workers read the streams the primary settled on (they would find no FANOUT_CHANNELS).
    expect((await resumeFromOne(gw, "orders.eu", 3)).map((m) => [m.seq, m.data])).toEqual([
      [1, { i: 1 }],
      [2, { i: 2 }],
      [3, { i: 4 }],
    ]);
    expect((await resumeFromOne(gw, "chat.room", 1)).map((m) => [m.seq, m.data])).toEqual([[1, { i: 3 }]]);
    expect((await history(gw, "orders.eu")).map((m) => [m.seq, m.data])).toEqual([
      [1, { i: 1 }],
      [2, { i: 2 }],
      [3, { i: 4 }],
    ]);
    // New messages go on in the same streams, and no stream of the new default was made.
    expect((await httpPublish(gw.url, "orders.eu", { i: 5 })).body.seq).toBe(4);
    expect((await httpPublish(gw.url, "chat.room", { i: 6 })).body.seq).toBe(2);
    expect(await streamNames(nats)).toEqual(made);
  });

  it("stream name — a fresh store gets FANOUT_CHANNELS (and FANOUT_CHANNELS_CHAT), with no word of EVENTS", async () => {
    const nats = await server();
    const gw = await start({ natsUrl: nats.url });
    expect(gw.logs.filter((l) => l.msg === "stream created").map((l) => l.stream)).toEqual(["FANOUT_CHANNELS", "FANOUT_CHANNELS_CHAT"]);
    expect(gw.logs.filter((l) => l.msg?.startsWith(KEPT))).toEqual([]);
    expect((await httpPublish(gw.url, "orders.eu", { i: 1 })).body.seq).toBe(1);
    expect((await resumeFromOne(gw, "orders.eu", 1)).map((m) => m.data)).toEqual([{ i: 1 }]);
    expect((await streamNames(nats)).filter((n) => !n.startsWith("KV_"))).toEqual(["FANOUT_CHANNELS", "FANOUT_CHANNELS_CHAT"]);
  });

  it("stream name — a NATS user granted only EVENTS' subjects (AUTH.md's minimal list under the old default) keeps EVENTS: the refused look-up of FANOUT_CHANNELS counts as none", async () => {
    const names = { stream: "EVENTS", subjectPrefix: "ev", livePrefix: "evlive", bucket: "PRESENCE" };
    const nats = await server(authorizationBlock([{ who: { user: "gw", password: "gw-pw" }, permissions: gatewayPermissions(names) }]));
    const password = join(dir, "gw-pw");
    writeFileSync(password, "gw-pw\n");
    const env = { NATS_USER: "gw", NATS_PASSWORD_FILE: password, NAMESPACES_FILE: "" };
    const old = await start({ natsUrl: nats.url, env: { ...env, STREAM_NAME: "EVENTS" } });
    expect((await httpPublish(old.url, "orders.eu", { i: 1 })).body.seq).toBe(1);
    expect(await old.stop()).toBe(0);

    const gw = await start({ natsUrl: nats.url, env });
    expect(gw.logs.filter((l) => l.msg?.startsWith(KEPT))).toHaveLength(1);
    expect((await resumeFromOne(gw, "orders.eu", 1)).map((m) => [m.seq, m.data])).toEqual([[1, { i: 1 }]]);
  });
});
