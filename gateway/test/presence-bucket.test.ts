// The presence bucket at start-up against a real nats-server: a failure that may pass is tried again, a
// refusal is final at once (the primary then logs that presence is unavailable and runs without it).
import { connect, TimeoutError, type NatsConnection } from "@nats-io/transport-node";
import { JetStreamApiError, jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { ensurePresenceBucket } from "../src/broker/jetstream/presence.js";
import { createLogger } from "../src/log.js";

let nats: NatsServerHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
const log = createLogger("silent", {});

beforeAll(async () => {
  nats = await startNatsServer();
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  await nc?.close();
  await nats?.stop();
});

/** The real manager, whose first `failures` stream-info requests time out (as during a leader election). */
function flaky(failures: number): { jsm: JetStreamManager; calls: () => number } {
  let calls = 0;
  const streams = new Proxy(jsm.streams, {
    get(target, prop, receiver) {
      if (prop !== "info") return Reflect.get(target, prop, receiver);
      return (...args: Parameters<JetStreamManager["streams"]["info"]>) => {
        calls++;
        if (calls <= failures) return Promise.reject(new TimeoutError());
        return target.info(...args);
      };
    },
  });
  return { jsm: new Proxy(jsm, { get: (t, p, r) => (p === "streams" ? streams : Reflect.get(t, p, r)) }), calls: () => calls };
}

describe("presence bucket — creation at start-up", () => {
  it("presence bucket — timeouts are tried again with backoff, and the bucket is created", async () => {
    const f = flaky(2);
    await ensurePresenceBucket(f.jsm, { bucket: "PRETRY", replicas: 1, storage: "file" }, log, 6, 10);
    expect(f.calls()).toBe(3);
    const si = await jsm.streams.info("KV_PRETRY");
    expect(si.config.allow_msg_ttl).toBe(true);
  });

  it("presence bucket — a failure that lasts is given up after the attempts allowed", async () => {
    const f = flaky(100);
    await expect(ensurePresenceBucket(f.jsm, { bucket: "PGIVEUP", replicas: 1, storage: "file" }, log, 3, 10)).rejects.toBeInstanceOf(TimeoutError);
    expect(f.calls()).toBe(3);
  });

  it("presence bucket — a refusal by the server (its subjects belong to another stream) is final at once", async () => {
    await jsm.streams.add({ name: "SQUATTER", subjects: ["$KV.PTAKEN.>"] });
    const f = flaky(0);
    const err = await ensurePresenceBucket(f.jsm, { bucket: "PTAKEN", replicas: 1, storage: "file" }, log, 6, 10).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JetStreamApiError);
    expect((err as JetStreamApiError).status).toBe(400);
    expect(f.calls()).toBe(1);
  });
});
