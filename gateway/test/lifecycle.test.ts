import { spawnSync } from "node:child_process";
import { connect } from "@nats-io/transport-node";
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { afterAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { CLI, childPids, startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { waitFor } from "#testkit/wait.js";
import { buildWithTruncatedBinary, UWS_BINARY } from "#testkit/uws-builds.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
});

async function nats(): Promise<NatsServerHandle> {
  const n = await startNatsServer();
  cleanups.push(() => n.stop());
  return n;
}
async function gateway(opts: Parameters<typeof startGateway>[0]): Promise<GatewayHandle> {
  const g = await startGateway(opts);
  cleanups.push(() => g.stop("SIGKILL"));
  return g;
}
const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("lifecycle — bad settings and startup checks", () => {
  it("a misspelt setting is named at start with the setting it likely meant (JWT_SECERT would leave authentication off)", async () => {
    const n = await nats();
    const g = await gateway({ natsUrl: n.url, workers: 1, env: { JWT_SECERT: "not-the-secret-0123456789-0123456789" } });
    const warn = g.logs.find((l) => typeof l.msg === "string" && l.msg.startsWith("environment variables that look like settings"));
    expect(warn?.variables).toEqual([{ variable: "JWT_SECERT", didYouMean: "JWT_SECRET" }]);
  });

  it("a bad setting exits 1 with a message naming it", () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "99999"], { encoding: "utf8", timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("invalid PORT (--port)");
    const e = spawnSync(process.execPath, [CLI], { encoding: "utf8", timeout: 30_000, env: { ...process.env, STREAM_REPLICAS: "seven" } });
    expect(e.status).toBe(1);
    expect(e.stderr).toContain("STREAM_REPLICAS");
  });

  it("a subject prefix over the presence bucket's subjects exits 1 (the stream would store every member's presence record)", () => {
    for (const [env, named] of [
      [
        { SUBJECT_PREFIX: "fgwpresence" },
        "invalid SUBJECT_PREFIX (--subject-prefix): the stream's subjects fgwpresence.> overlap the presence bucket's subjects fgwpresence.PRESENCE.>",
      ],
      [{ LIVE_SUBJECT_PREFIX: "fgwpresence.PRESENCE.x" }, "invalid LIVE_SUBJECT_PREFIX (--live-subject-prefix)"],
      [{ PRESENCE_BUCKET: "P1", CONTROL_SUBJECT_PREFIX: "$KV.P1" }, "invalid CONTROL_SUBJECT_PREFIX (--control-subject-prefix)"],
    ] as const) {
      const r = spawnSync(process.execPath, [CLI, "--port", "0"], { encoding: "utf8", timeout: 30_000, env: { ...process.env, ...env } });
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(named);
    }
  });

  it("a duplicate window longer than the stream's maxAge exits 1 naming both settings", () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0"], { encoding: "utf8", timeout: 30_000, env: { ...process.env, STREAM_MAX_AGE: "1m" } });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("invalid STREAM_DUPLICATE_WINDOW (--stream-duplicate-window): 120000 ms is longer than STREAM_MAX_AGE (60000 ms)");
  });

  it("a uWebSockets.js binary that does not load exits 1 with the loader's cause, before anything starts", () => {
    const r = spawnSync(process.execPath, [CLI, "--port", "0"], {
      encoding: "utf8",
      timeout: 30_000,
      env: { ...process.env, UWS_MODULE: buildWithTruncatedBinary() },
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`ERR_UWS_LOAD: .*${UWS_BINARY}: file too short`));
    expect(r.stderr).not.toContain("Require stack");
  });

  it("an existing stream with a different config stops startup unless --update-stream", async () => {
    const n = await nats();
    const nc = await connect({ servers: n.url });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: "FANOUT_CHANNELS", subjects: ["ev.>"], max_msgs_per_subject: 5 });
    const r = spawnSync(process.execPath, [CLI, "--port", "0", "--workers", "1", "--nats-url", n.url], { encoding: "utf8", timeout: 30_000 });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain("max_msgs_per_subject");
    const g = await gateway({ natsUrl: n.url, workers: 1, args: ["--update-stream"] });
    expect((await jsm.streams.info("FANOUT_CHANNELS")).config.max_msgs_per_subject).toBe(-1);
    await g.stop();
    await nc.close();
  });

  it("a stream made before consumer-free live delivery (no republish rule, server's consumer limit) is updated by itself, with a warning; its messages stay and are delivered", async () => {
    const n = await nats();
    const nc = await connect({ servers: n.url });
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({
      name: "FANOUT_CHANNELS",
      subjects: ["ev.>"],
      allow_direct: true,
      max_age: 86_400_000_000_000,
      max_bytes: 1_073_741_824,
      duplicate_window: 120_000_000_000,
    });
    const js = jetstream(nc);
    for (let i = 0; i < 3; i++) await js.publish("ev.old.ch", new TextEncoder().encode(`{"i":${i}}`));
    const g = await gateway({ natsUrl: n.url, workers: 1 });
    const warned = g.logs.find((l) => String(l.msg).startsWith("stream updated for consumer-free live delivery"));
    expect(warned).toBeDefined();
    expect(JSON.stringify(warned!.diff)).toContain("republish");
    const si = await jsm.streams.info("FANOUT_CHANNELS");
    expect(si.config.republish).toEqual({ src: "ev.>", dest: "evlive.>" });
    expect(si.config.max_consumers).toBe(10_000);
    expect(si.state.messages).toBe(3);
    const c = await TestClient.connect(g.wsUrl);
    await c.sub("old.ch", { from: "all" });
    expect((await httpPublish(g.url, "old.ch", { i: 3 })).status).toBe(201);
    await c.waitForMsgs(4);
    expect(c.msgs.map((m) => (m.data as { i: number }).i)).toEqual([0, 1, 2, 3]);
    c.close();
    await g.stop();
    await nc.close();
  });
});

describe("lifecycle — embedded nats-server", () => {
  it("starts a JetStream nats-server child, serves through it, and stops it on SIGTERM", async () => {
    const g = await gateway({ workers: 1 });
    const ready = g.logs.find((l) => l.msg === "embedded nats-server ready")!;
    expect(ready).toBeDefined();
    const natsPid = ready.natsPid as number;
    expect(pidAlive(natsPid)).toBe(true);
    // The default, not a problem: info, not a warning on every `npm start`.
    expect(g.logs.find((l) => String(l.msg).startsWith("no NATS_URL: using the embedded nats-server"))?.level).toBe(30);
    const c = await TestClient.connect(g.wsUrl);
    await c.sub("embedded.check");
    expect((await httpPublish(g.url, "embedded.check", { ok: true })).status).toBe(201);
    await c.waitForMsgs(1);
    expect(await g.stop("SIGTERM")).toBe(0);
    expect(pidAlive(natsPid)).toBe(false);
  });

  it("embedded nats-server — a SIGKILLed primary does not leave it running (it used to outlive the gateway)", async () => {
    const g = await gateway({ workers: 1 });
    const natsPid = g.logs.find((l) => l.msg === "embedded nats-server ready")!.natsPid as number;
    expect(pidAlive(natsPid)).toBe(true);
    g.process.kill("SIGKILL");
    await g.exited;
    await waitFor(() => !pidAlive(natsPid), { timeoutMs: 15_000, what: "embedded nats-server gone after the primary's SIGKILL" });
  });
});

describe("lifecycle — workers", () => {
  it("a killed worker is restarted and its clients can reconnect and receive", async () => {
    const n = await nats();
    const g = await gateway({ natsUrl: n.url, workers: 2, args: ["--restart-backoff", "100ms"] });
    const before = await childPids(g.process.pid!);
    expect(before.length).toBe(2);
    const clients = await Promise.all(Array.from({ length: 20 }, () => TestClient.connect(g.wsUrl)));
    await Promise.all(clients.map((c) => c.sub("restart.x")));
    process.kill(before[0]!, "SIGKILL");
    await waitFor(() => clients.some((c) => !c.open) || undefined, { what: "clients of the killed worker closed" });
    const after = await waitFor(
      async () => {
        const p = await childPids(g.process.pid!);
        return p.length === 2 && !p.includes(before[0]!) ? p : undefined;
      },
      { what: "replacement worker", timeoutMs: 15_000 },
    );
    expect(after).toContain(before[1]);
    expect(g.logs.some((l) => l.msg === "worker exited; restarting")).toBe(true);
    await waitFor(async () => ((await fetch(`${g.url}/readyz`)).ok ? true : undefined), { what: "ready again" });
    // Dropped clients reconnect (to whichever worker) and receive again.
    const again = await Promise.all(clients.map(async (c) => (c.open ? c : TestClient.connect(g.wsUrl))));
    await Promise.all(again.filter((c) => !clients.includes(c)).map((c) => c.sub("restart.x")));
    await httpPublish(g.url, "restart.x", { after: true });
    await Promise.all(again.map((c) => waitFor(() => c.msgs.find((m) => (m.data as { after?: boolean }).after), { what: "message after restart" })));
    for (const c of again) c.close();
  });

  it("SIGTERM drains: clients get 1001, new connections are refused, exit 0 within the bound", async () => {
    const n = await nats();
    const g = await gateway({ natsUrl: n.url, workers: 2, args: ["--shutdown-timeout", "5s"] });
    const clients = await Promise.all(Array.from({ length: 10 }, () => TestClient.connect(g.wsUrl)));
    await Promise.all(clients.map((c) => c.sub("drain.x")));
    const t0 = Date.now();
    g.process.kill("SIGTERM");
    const codes = await Promise.all(clients.map((c) => c.waitClosed()));
    expect(codes.every((c) => c === 1001)).toBe(true);
    expect(await g.exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5_000 + 1_000);
    await expect(TestClient.connect(g.wsUrl)).rejects.toThrow();
  });
});

describe("lifecycle — broker outage", () => {
  it("NATS restart: /readyz flips to 503 and back, subscriptions resume, HTTP publish answers 503 meanwhile", async () => {
    const n = await nats();
    const g = await gateway({ natsUrl: n.url, workers: 2 });
    const c = await TestClient.connect(g.wsUrl);
    await c.sub("outage.x");
    await httpPublish(g.url, "outage.x", { n: 1 });
    await c.waitForMsgs(1);
    await n.kill();
    await waitFor(async () => ((await fetch(`${g.url}/readyz`)).status === 503 ? true : undefined), { what: "readyz 503", timeoutMs: 15_000 });
    expect(await (await fetch(`${g.url}/readyz`)).json()).toMatchObject({ ready: false, broker: { connected: false } });
    expect((await httpPublish(g.url, "outage.x", { n: 0 })).status).toBe(503);
    const pubFrame = await c.request({ op: "pub", channel: "outage.x", data: 0 });
    expect(pubFrame.code).toBe("broker_unavailable");
    await n.restart();
    // Every worker must be back before readyz is 200 on all of them: poll a few times.
    await waitFor(
      async () => {
        const rs = await Promise.all([1, 2, 3, 4].map(() => fetch(`${g.url}/readyz`).then((r) => r.status)));
        return rs.every((s) => s === 200) ? true : undefined;
      },
      { what: "readyz 200 after restart", timeoutMs: 20_000 },
    );
    await waitFor(async () => ((await httpPublish(g.url, "outage.x", { n: 2 })).status === 201 ? true : undefined), {
      what: "publish after restart",
      timeoutMs: 10_000,
    });
    await waitFor(() => c.msgs.find((m) => (m.data as { n: number }).n === 2), { what: "live message after NATS restart", timeoutMs: 20_000 });
    // Resumed from where it was: nothing replayed twice.
    const seqs = c.msgs.map((m) => m.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(c.open).toBe(true);
    c.close();
  });
});
