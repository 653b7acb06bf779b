// Artillery processor for ws-capacity.yml: times what Artillery's WebSocket engine does not (connect, sub ack,
// ping round trip, publish ack, fan-out delivery) and reports them as custom histograms/counters, which land
// in the --output JSON next to Artillery's own vusers.* and errors.* metrics. CommonJS: Artillery require()s it.
"use strict";

const { performance } = require("node:perf_hooks");

const nowMs = () => performance.timeOrigin + performance.now();

/** connect.function: runs just before the socket is opened. */
function beforeConnect(_wsArgs, context, done) {
  context.vars.connectStart = performance.now();
  done();
}

/** First step after `open`: connect time, and one listener that classifies every frame the server sends. */
function onOpen(context, ee, next) {
  const v = context.vars;
  ee.emit("histogram", "fgw.connect_ms", performance.now() - v.connectStart);
  v.finished = false;
  const ws = context.ws;
  ws.on("message", (data) => {
    let f;
    try {
      f = JSON.parse(String(data));
    } catch {
      ee.emit("counter", "fgw.frames_unparsable", 1);
      return;
    }
    switch (f.op) {
      case "msg":
        ee.emit("counter", "fgw.msgs_received", 1);
        if (typeof f.ts === "number") ee.emit("histogram", "fgw.delivery_ms", nowMs() - f.ts);
        break;
      case "pong":
        ee.emit("histogram", "fgw.ping_rtt_ms", performance.now() - v.pingAt);
        ee.emit("counter", "fgw.pongs", 1);
        break;
      case "ok":
        if (f.id === "sub") {
          v.subAcked = true;
          ee.emit("histogram", "fgw.sub_ack_ms", performance.now() - v.subAt);
        } else if (typeof f.seq === "number") {
          ee.emit("histogram", "fgw.pub_ack_ms", performance.now() - v.pubAt);
          ee.emit("counter", "fgw.pub_acked", 1);
        }
        break;
      case "err":
        ee.emit("counter", `fgw.err.${f.code}`, 1);
        break;
      default:
        break;
    }
  });
  ws.on("close", (code) => {
    if (!v.finished) ee.emit("error", `closed by server before the end (${code})`);
  });
  next();
}

function beforeSub(context, _ee, next) {
  context.vars.subAt = performance.now();
  next();
}
function beforePing(context, _ee, next) {
  context.vars.pingAt = performance.now();
  next();
}
function beforePub(context, _ee, next) {
  context.vars.pubAt = performance.now();
  next();
}

/** Last step: the sub must have been acknowledged during the session. */
function finish(context, ee, next) {
  context.vars.finished = true;
  if (!context.vars.subAcked) ee.emit("error", "sub not acknowledged");
  next();
}

module.exports = { beforeConnect, onOpen, beforeSub, beforePing, beforePub, finish };
