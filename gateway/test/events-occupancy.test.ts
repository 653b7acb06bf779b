import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import type { TestClient } from "#testkit/ws-client.js";
import { uniqueNames } from "#testkit/clients.js";
import { waitFor } from "#testkit/wait.js";
import { AUDIENCE, connect, ISSUER, SECRET, sign } from "#testkit/auth.js";
import { SseReader } from "#testkit/sse-client.js";
import { scrape } from "#testkit/metrics.js";

// Cluster-wide channel.occupied / channel.vacated and identified users' presence.join / presence.leave,
// across instances sharing one nats-server, read from the events stream itself: what is stored there is
// what every webhook and NATS reader gets, and a repeat the stream dropped (Nats-Msg-Id) is not in it.

const DEBOUNCE_MS = 2_000;
const TTL_MS = 3_000;
type Event = { id: number; type: string; channel?: string; user?: string; client?: string };

let nats: NatsServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
let a: GatewayHandle;
let b: GatewayHandle;
const open: TestClient[] = [];
const uniq = uniqueNames();
const read: Event[] = [];

const start = (ttlMs = TTL_MS): Promise<GatewayHandle> =>
  startGateway({
    natsUrl: nats.url,
    workers: 1,
    // debug: the primaries' shares, the leader's records and steps, for the failure report below.
    logLevel: "debug",
    env: {
      EVENTS: "all",
      EVENTS_DEBOUNCE: `${DEBOUNCE_MS}ms`,
      EVENTS_INSTANCE_TTL: `${ttlMs}ms`,
      JWT_SECRET: SECRET,
      JWT_ISSUER: ISSUER,
      JWT_AUDIENCE: AUDIENCE,
    },
  });

/** Every event stored so far, in stream order (read once each). */
async function stored(): Promise<Event[]> {
  const last = (await jsm.streams.info("FANOUT_EVENTS")).state.last_seq;
  for (let seq = (read.at(-1)?.id ?? 0) + 1; seq <= last; seq++) {
    const m = await jsm.streams.getMessage("FANOUT_EVENTS", { seq });
    if (m) read.push({ id: m.seq, ...m.json<Omit<Event, "id">>() });
  }
  return read;
}

/** The cluster-wide events of `channel` (and of `user` in it, for presence), in stream order. */
async function sharedOf(channel: string, user?: string): Promise<string[]> {
  return (await stored())
    .filter((e) => e.channel === channel && e.client === undefined && (user === undefined || e.user === user))
    .filter((e) => e.type.startsWith("channel.") || user !== undefined)
    .map((e) => e.type);
}

async function until(channel: string, expected: string[], user?: string): Promise<void> {
  await waitFor(async () => ((await sharedOf(channel, user)).length >= expected.length ? true : undefined), {
    timeoutMs: 30_000,
    what: `${expected.join(", ")} of ${channel}`,
  });
  expect(await sharedOf(channel, user)).toEqual(expected);
}

async function client(gw: GatewayHandle, user = "alice"): Promise<TestClient> {
  const token = await sign({ channels: { sub: ["occ.>"] } }, { sub: user });
  const c = await connect(gw.wsUrl, { headers: { authorization: `Bearer ${token}` } });
  open.push(c);
  return c;
}

/** A socket on `gw` subscribed to `channel`, once the channel's occupied is stored. */
async function occupy(gw: GatewayHandle, channel: string): Promise<TestClient> {
  const c = await client(gw);
  await c.sub(channel);
  await until(channel, ["channel.occupied"]);
  return c;
}

async function close(c: TestClient): Promise<void> {
  c.ws.close(1000, "bye");
  await c.waitClosed();
}

/**
 * A latch instead of a sleep: a channel occupied (stored) and left now, whose vacated is stored DEBOUNCE_MS from
 * now. The leader handles changes in order, so once it is there, any vacated (or leave) due before it is too.
 * It waits for the occupied before leaving: a channel held only for the moment the leader takes to read the
 * state may record neither event (docs/operations.md, "Cluster-wide events").
 */
async function debouncePassed(gw: GatewayHandle): Promise<void> {
  const channel = uniq("occ.latch");
  const c = await occupy(gw, channel);
  await close(c);
  await until(channel, ["channel.occupied", "channel.vacated"]);
}

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await natsConnect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
  a = await start();
  b = await start();
});
/** On a failure: both instances' warnings and leader changes, and every event stored, to say which step was missing. */
beforeEach(({ onTestFailed }) => {
  onTestFailed(() => {
    for (const [name, gw] of [
      ["a", a],
      ["b", b],
    ] as const) {
      const lines = gw.logs.filter((l) => Number(l.level ?? 0) >= 40 || /lead|share|occupancy|shared state/.test(String(l.msg)));
      console.error(
        `instance ${name}:`,
        lines
          .slice(-60)
          .map((l) => JSON.stringify(l))
          .join("\n"),
      );
    }
    console.error("events stored:", JSON.stringify(read.filter((e) => e.type.startsWith("channel.") || e.type.startsWith("presence."))));
    return stateTail();
  });
});

/** The shared state bucket's last records and its watchers' positions (who wrote, and who saw, what). */
async function stateTail(): Promise<void> {
  const stream = "KV_FANOUT_EVENTS_STATE";
  const info = await jsm.streams.info(stream);
  const tail: string[] = [];
  for (let seq = Math.max(info.state.first_seq, info.state.last_seq - 40); seq <= info.state.last_seq; seq++) {
    const m = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
    if (m) tail.push(`${m.seq} ${m.subject.slice("$KV.FANOUT_EVENTS_STATE.".length)} ${m.data.length}B ${m.time.toISOString()}`);
  }
  console.error("state bucket tail:", tail.join("\n"));
  for await (const c of jsm.consumers.list(stream))
    console.error("watcher:", JSON.stringify({ delivered: c.delivered, pending: c.num_pending, created: c.created, waiting: c.num_waiting }));
}

afterAll(async () => {
  for (const c of open) c.ws.terminate();
  await a?.stop();
  await b?.stop();
  await nc?.close();
  await nats?.stop();
});

describe("events — channel.occupied and channel.vacated across instances", () => {
  it("events — subscribers on two instances: occupied once at the first, nothing when one leaves, vacated once after the last; each once though two instances run", async () => {
    const channel = uniq("occ.two");
    const onA = await occupy(a, channel);
    const onB = await client(b, "bob");
    await onB.sub(channel);
    await close(onA);
    await debouncePassed(a);
    expect(await sharedOf(channel)).toEqual(["channel.occupied"]);
    await close(onB);
    await until(channel, ["channel.occupied", "channel.vacated"]);
    const events = (await stored()).filter((e) => e.channel === channel && e.type.startsWith("channel."));
    expect(events.map((e) => Object.keys(e).sort())).toEqual([
      ["channel", "id", "time", "type"],
      ["channel", "id", "time", "type"],
    ]);
    // The subscribe and unsubscribe events of both sockets are there as before.
    expect((await stored()).filter((e) => e.channel === channel && e.type === "subscribe")).toHaveLength(2);
    // One leader: A, started first; each metric family once in a scrape.
    const [sa, sb] = await Promise.all([scrape(a.metricsUrl), scrape(b.metricsUrl)]);
    expect([sa.value("fanout_cluster_leader"), sb.value("fanout_cluster_leader")]).toEqual([1, 0]);
    expect(sa.text.match(/^# TYPE fanout_events_failed_total /gm)).toHaveLength(1);
  });

  it("events — a reconnect within the debounce (to the other instance) records neither vacated nor occupied", async () => {
    const channel = uniq("occ.reconnect");
    const first = await occupy(a, channel);
    await close(first);
    const again = await client(b);
    await again.sub(channel);
    await debouncePassed(b);
    expect(await sharedOf(channel)).toEqual(["channel.occupied"]);
    await close(again);
    await until(channel, ["channel.occupied", "channel.vacated"]);
  });

  it("events — an SSE stream is a subscriber too: with a WebSocket on the other instance, vacated only after both left", async () => {
    const channel = uniq("occ.sse");
    const token = await sign({ channels: { sub: ["occ.>"] } }, { sub: "dave" });
    const stream = await SseReader.open(`${b.url}/v1/channels/${encodeURIComponent(channel)}/events`, { authorization: `Bearer ${token}` });
    await until(channel, ["channel.occupied"]);
    const ws = await client(a);
    await ws.sub(channel);
    stream.close();
    await debouncePassed(b);
    expect(await sharedOf(channel)).toEqual(["channel.occupied"]);
    await close(ws);
    await until(channel, ["channel.occupied", "channel.vacated"]);
  });

  it("events — a pattern subscription is its own channel: occupied and vacated carry the pattern as subscribed", async () => {
    const channel = `${uniq("occ.pattern")}.*`;
    const c = await occupy(b, channel);
    await close(c);
    await until(channel, ["channel.occupied", "channel.vacated"]);
  });
});

describe("events — an identified user's presence.join and presence.leave across instances", () => {
  it("events — one join for the user's first member connection on any instance, one leave after the last; a leave then rejoin within the debounce records neither", async () => {
    const channel = uniq("occ.presence");
    const one = await client(a, "carol");
    await one.sub(channel, { presence: true });
    await until(channel, ["presence.join"], "carol");
    const two = await client(b, "carol");
    await two.sub(channel, { presence: true });
    await close(one);
    await close(two);
    const back = await client(a, "carol");
    await back.sub(channel, { presence: true });
    await debouncePassed(a);
    expect(await sharedOf(channel, "carol")).toEqual(["presence.join"]);
    await close(back);
    await until(channel, ["presence.join", "presence.leave"], "carol");
    const events = (await stored()).filter((e) => e.channel === channel && e.user === "carol" && e.type.startsWith("presence."));
    expect(events.every((e) => e.client === undefined)).toBe(true);
  });

  it("events — the longest names (a 256-character user, a 255-character channel, 3-byte characters) record presence.join and presence.leave", async () => {
    const user = "界".repeat(256);
    const channel = uniq("occ.long.");
    const long = `${channel}${"界".repeat(255 - channel.length)}`;
    const c = await client(a, user);
    await c.sub(long, { presence: true });
    await until(long, ["presence.join"], user);
    await close(c);
    await until(long, ["presence.join", "presence.leave"], user);
  });
});

describe("events — a worker or an instance killed with SIGKILL", () => {
  it("events — a worker killed while holding a channel's only subscriber: its primary lets its channels go, vacated follows the debounce", async () => {
    const channel = uniq("occ.worker");
    const c = await occupy(a, channel);
    const [worker] = await childPids(a.process.pid!);
    process.kill(worker!, "SIGKILL");
    await c.waitClosed();
    await until(channel, ["channel.occupied", "channel.vacated"]);
    // The pool starts another worker: the instance serves again before the next test.
    const again = await waitFor(() => client(a).catch(() => undefined), { timeoutMs: 20_000, what: "a socket on the new worker" });
    await close(again);
  });

  it("events — an instance stopped (SIGTERM) deletes its heartbeat: its channels go vacated after the debounce, long before its TTL", async () => {
    // Its heartbeat would last 60 s: the vacated, within the 30 s `until` waits, came from the stop.
    const c = await start(60_000);
    const channel = uniq("occ.stopped");
    await occupy(c, channel);
    expect(await c.stop()).toBe(0);
    await until(channel, ["channel.occupied", "channel.vacated"]);
  });

  it("events — the leader killed while holding a channel's only subscriber: the other instance takes the lead, and vacated follows the expiry, once", async () => {
    const channel = uniq("occ.killed");
    await occupy(a, channel);
    expect(a.logs.some((l) => l.msg === "this instance leads the cluster's services")).toBe(true);
    const workers = await childPids(a.process.pid!);
    const killedAt = Date.now();
    await a.stop("SIGKILL");
    for (const pid of workers) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await until(channel, ["channel.occupied", "channel.vacated"]);
    expect(Date.now() - killedAt).toBeGreaterThanOrEqual(DEBOUNCE_MS);
    expect(b.logs.some((l) => l.msg === "this instance leads the cluster's services")).toBe(true);
    // Still once, with B watching alone.
    await debouncePassed(b);
    expect(await sharedOf(channel)).toEqual(["channel.occupied", "channel.vacated"]);
  });
});
