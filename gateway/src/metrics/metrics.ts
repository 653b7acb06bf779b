import client from "prom-client";

/**
 * The worker's metrics. Children and metric objects are made once here, never per message. The primary
 * aggregates all workers with prom-client's AggregatorRegistry; gauges are summed unless noted.
 */
export function createMetrics(registry: client.Registry = client.register) {
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });
  const r = [registry];
  /** Read when the metrics are collected; the worker points it at its broker. */
  const directLink = { up: (): boolean => false };
  const publishes = new client.Counter({
    name: "fanout_publishes_total",
    help: "Publishes through the gateway by result",
    labelNames: ["result", "via"] as const,
    registers: r,
  });
  return {
    registry,
    connections: new client.Gauge({ name: "fanout_connections", help: "Open WebSocket connections", registers: r }),
    sseConnections: new client.Gauge({ name: "fanout_sse_connections", help: "Open Server-Sent Events streams", registers: r }),
    subscriptions: new client.Gauge({ name: "fanout_subscriptions", help: "Active client subscriptions", registers: r }),
    streamDrift: new client.Gauge({
      name: "fanout_stream_drift",
      help: "1 while this part of the stream's (or presence bucket's) setup has drifted from what the gateway needs (per worker)",
      labelNames: ["what"],
      registers: r,
    }),
    liveFeeds: new client.Gauge({
      name: "fanout_live_feeds",
      help: "Live feeds: one core NATS subscription (or Redis SUBSCRIBE) per channel pattern per worker; no JetStream consumer",
      registers: r,
    }),
    directGets: new client.Counter({
      name: "fanout_direct_gets_total",
      help: "Direct gets (replay, resume, history, repairs) put on the wire, by connection: link (the worker's own, REPLAY_CONNECTION=own) or main",
      labelNames: ["via"] as const,
      registers: r,
    }),
    directLinkUp: new client.Gauge({
      name: "fanout_direct_link_up",
      help: "Workers whose own direct-get connection is connected (summed over workers)",
      registers: r,
      collect() {
        this.set(directLink.up() ? 1 : 0);
      },
    }),
    directLink,
    liveRepairs: new client.Counter({
      name: "fanout_live_repairs_total",
      help: "Live feed repairs read from the stream, by reason (gap, reconnect, leader, overflow)",
      labelNames: ["reason"],
      registers: r,
    }),
    controlRequests: new client.Counter({
      name: "fanout_control_requests_total",
      help: "Control plane requests a worker took as the door (HTTP or NATS), by op and result (ok, incomplete: not every worker answered in time, or the error code)",
      labelNames: ["op", "result"],
      registers: r,
    }),
    centrifugoApiCalls: new client.Counter({
      name: "fanout_centrifugo_api_calls_total",
      help: "Centrifugo server API method calls (/api), by method (unknown: a method it does not have) and result (ok, or the Centrifugo error code)",
      labelNames: ["method", "result"],
      registers: r,
    }),
    callbackFailures: new client.Counter({
      name: "fanout_callback_failures_total",
      help: "Throws of callbacks called from a NATS connection's reader (subscriptions, consumers, watches), caught so that the reader goes on, by kind",
      labelNames: ["kind"] as const,
      registers: r,
    }),
    brokerMessages: new client.Counter({ name: "fanout_broker_messages_total", help: "Messages received from the broker by live consumers", registers: r }),
    framesDelivered: new client.Counter({ name: "fanout_frames_delivered_total", help: "Message frames handed to sockets", registers: r }),
    deltasMade: new client.Counter({
      name: "fanout_deltas_made_total",
      help: "Fossil deltas computed (once per worker per channel and message, shared by its delta subscribers)",
      registers: r,
    }),
    deltasSkipped: new client.Counter({
      name: "fanout_deltas_skipped_total",
      help: "Fossil deltas not made because they would cost the encoder more than DELTA_WORK_PER_BYTE per byte (crafted or very repetitive payloads); the message went full",
      registers: r,
    }),
    deltaFrames: new client.Counter({
      name: "fanout_delta_frames_total",
      help: "Message frames handed to delta subscriptions, by kind (delta, or full: first of a channel, gap, not smaller)",
      labelNames: ["kind"] as const,
      registers: r,
    }),
    deliveriesDropped: new client.Counter({
      name: "fanout_deliveries_dropped_total",
      help: "Deliveries not made to a socket because of backpressure",
      registers: r,
    }),
    slowSwitches: new client.Counter({
      name: "fanout_slow_consumer_switches_total",
      help: "Sockets taken out of live delivery for backpressure",
      registers: r,
    }),
    slowClosed: new client.Counter({
      name: "fanout_slow_consumer_closed_total",
      help: "Sockets closed with 4008 after staying over the buffer limit",
      registers: r,
    }),
    badFrames: new client.Counter({
      name: "fanout_bad_frames_total",
      help: "err frames sent to clients (answers to their frames and unsolicited ones), by code",
      labelNames: ["code"] as const,
      registers: r,
    }),
    publishOk: publishes.labels("ok", "ws"),
    publishDuplicate: publishes.labels("duplicate", "ws"),
    publishError: publishes.labels("error", "ws"),
    httpPublishOk: publishes.labels("ok", "http"),
    httpPublishDuplicate: publishes.labels("duplicate", "http"),
    httpPublishError: publishes.labels("error", "http"),
    publishDuration: new client.Histogram({
      name: "fanout_publish_duration_seconds",
      help: "Broker publish latency (until the JetStream ack)",
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: r,
    }),
    deliveryLatency: new client.Histogram({
      name: "fanout_delivery_latency_seconds",
      help: "Broker timestamp to frame handed to uWS, once per message per worker (not per socket)",
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: r,
    }),
    liveTurnMessages: new client.Histogram({
      name: "fanout_live_turn_messages",
      help: "Messages the live feeds handed to the hub in one event-loop turn (the broker reader's batch), per worker turn that carried any",
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
      registers: r,
    }),
    liveTurnSeconds: new client.Histogram({
      name: "fanout_live_turn_seconds",
      help: "From a turn's first live message to its check phase, where uWS writes what the turn published to the sockets (hub to socket write)",
      buckets: [0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers: r,
    }),
    brokerConnected: new client.Gauge({
      name: "fanout_broker_connected",
      help: "1 while the worker's broker connection is up (min over workers)",
      aggregator: "min",
      registers: r,
    }),
    brokerReconnects: new client.Counter({ name: "fanout_broker_reconnects_total", help: "Broker reconnects", registers: r }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
