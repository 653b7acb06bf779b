// A catch-up that fails for real, through both doors of one gateway: the stream's direct gets are turned off
// (allow_direct false, which STREAM_REPAIR=report leaves as it is), so the start position still resolves
// (stream info) but every page read of the catch-up is refused by nats-server. The subscription lifecycle
// (fanout/lifecycle.ts) maps the failure once: the WebSocket's `err` frame and the SSE `err` event carry the
// same code and the same `temporary`.
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { jetstreamManager, type JetStreamManager } from "@nats-io/jetstream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsServer, type NatsServerHandle } from "#testkit/nats-server.js";
import { startGateway, type GatewayHandle } from "#testkit/gateway.js";
import { httpPublish, TestClient } from "#testkit/ws-client.js";
import { SseReader } from "#testkit/sse-client.js";
import { waitFor } from "#testkit/wait.js";
import { metric } from "#testkit/metrics.js";

const CH = "catchup.fails";
let nats: NatsServerHandle;
let gw: GatewayHandle;
let nc: NatsConnection;
let jsm: JetStreamManager;
const closers: (() => void)[] = [];

beforeAll(async () => {
  nats = await startNatsServer();
  // The catch-up re-reads a refused page for 250 + 500 ms of backoff (CATCHUP_RETRY_FOR 1s), then gives up.
  gw = await startGateway({ natsUrl: nats.url, workers: 1, env: { STREAM_REPAIR: "report", STREAM_CHECK_INTERVAL: "1h", CATCHUP_RETRY_FOR: "1s" } });
  nc = await connect({ servers: nats.url });
  jsm = await jetstreamManager(nc);
});
afterAll(async () => {
  for (const c of closers) c();
  await nc?.close();
  await gw?.stop();
  await nats?.stop();
});

describe("catch-up failure — one code for every door", () => {
  it("catch-up failure — pages the broker refuses end the WebSocket subscription and the SSE stream with the same code", async () => {
    let first = 0;
    for (let i = 1; i <= 3; i++) {
      const r = await httpPublish(gw.url, CH, { i });
      expect(r.status).toBe(201);
      first ||= r.body.seq as number;
    }
    const info = await jsm.streams.info("FANOUT_CHANNELS");
    await jsm.streams.update("FANOUT_CHANNELS", { ...info.config, allow_direct: false });
    expect((await jsm.streams.info("FANOUT_CHANNELS")).config.allow_direct).toBe(false);

    const ws = await TestClient.connect(gw.wsUrl);
    closers.push(() => ws.close());
    const ok = await ws.sub(CH, { from: { seq: first } });
    expect(ok.op).toBe("ok");
    const sse = await SseReader.open(`${gw.url}/v1/channels/${CH}/events?from_seq=${first}`);
    closers.push(() => sse.close());
    expect(sse.status).toBe(200);

    // The catch-up retries its read with backoff (CATCHUP_RETRY_FOR) before it gives up.
    const wsErr = await waitFor(() => ws.frames.find((f) => f.op === "err"), { timeoutMs: 45_000, what: "the WebSocket's err frame" });
    const sseErr = await waitFor(() => sse.events.find((e) => e.event === "err"), { timeoutMs: 45_000, what: "the SSE err event" });
    const sseBody = JSON.parse(sseErr.data) as { code: string; temporary: boolean };
    expect(ws.msgs).toEqual([]);
    expect(sse.seqs).toEqual([]);
    expect(["broker_error", "broker_unavailable"]).toContain(wsErr.code);
    expect({ code: sseBody.code, temporary: sseBody.temporary }).toEqual({ code: wsErr.code, temporary: wsErr.temporary });
    expect(wsErr.message).toContain(`subscribe again with from:{seq:${first}}`);
    await waitFor(() => sse.ended || undefined, { what: "the SSE stream's end" });
    // The WebSocket's err was unsolicited (no frame asked for it): it is counted all the same.
    expect(await metric(gw.metricsUrl, "fanout_bad_frames_total", { code: String(wsErr.code) })).toBeGreaterThanOrEqual(1);
    // The WebSocket stays open; its subscription is gone (a second sub is accepted).
    await jsm.streams.update("FANOUT_CHANNELS", { ...info.config, allow_direct: true });
    expect((await ws.sub(CH)).op).toBe("ok");
  });
});
