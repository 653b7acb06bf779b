import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { parseJsHeaders, parseTimestampBytes, parseTimestampText } from "../../src/broker/jetstream/headers.js";

const bytes = (s: string) => Buffer.from(s, "utf8");

describe("JetStream headers — raw parser", () => {
  it("js headers — a direct-get message, an end-of-batch status and a republished message with user headers", () => {
    const msg = bytes(
      "NATS/1.0\r\nNats-Msg-Id: x1\r\nNats-Stream: FANOUT_CHANNELS\r\nNats-Subject: ev.orders.eü\r\nNats-Sequence: 1234\r\nNats-Time-Stamp: 2026-11-22T18:02:18.478069664Z\r\nNats-Num-Pending: 17\r\nNats-Last-Sequence: 1200\r\n\r\n",
    );
    expect(parseJsHeaders(msg, msg.length)).toEqual({
      code: 0,
      subject: "ev.orders.eü",
      seq: 1234,
      ts: Date.parse("2026-11-22T18:02:18.478Z") + 0.069,
      pending: 17,
      last: 1200,
      description: "",
    });
    const eob = bytes("NATS/1.0 204 EOB\r\nNats-Num-Pending: 0\r\nNats-Last-Sequence: 6\r\n\r\n");
    expect(parseJsHeaders(eob, eob.length)).toMatchObject({ code: 204, pending: 0, last: 6 });
    // The fixed layouts (no headers of the message's own): a direct-get reply and a republished message.
    const dg = bytes(
      "NATS/1.0\r\nNats-Stream: FANOUT_CHANNELS\r\nNats-Subject: ev.bench.replay\r\nNats-Sequence: 12345\r\nNats-Time-Stamp: 2026-11-22T18:02:18.4Z\r\nNats-Num-Pending: 87655\r\nNats-Last-Sequence: 12344\r\n\r\n",
    );
    expect(parseJsHeaders(dg, dg.length)).toEqual({
      code: 0,
      subject: "ev.bench.replay",
      seq: 12345,
      ts: Date.parse("2026-11-22T18:02:18.400Z"),
      pending: 87655,
      last: 12344,
      description: "",
    });
    // The same block inside a larger buffer (the direct-get link parses in place in the socket's chunk).
    const around = Buffer.concat([bytes("HMSG _INBOX.x.1 1 170 270\r\n"), dg, bytes('{"x":1}\r\n')]);
    expect(parseJsHeaders(around, 27 + dg.length, 27)).toEqual(parseJsHeaders(dg, dg.length));
    const rp = bytes(
      "NATS/1.0\r\nNats-Stream: FANOUT_CHANNELS\r\nNats-Subject: ev.a.x\r\nNats-Sequence: 6\r\nNats-Time-Stamp: 2026-11-22T18:02:18.481869613Z\r\nNats-Last-Sequence: 4\r\n\r\n",
    );
    expect(parseJsHeaders(rp, rp.length)).toEqual({
      code: 0,
      subject: "ev.a.x",
      seq: 6,
      ts: Date.parse("2026-11-22T18:02:18.481Z") + 0.869,
      pending: 0,
      last: 4,
      description: "",
    });
    // Its own headers after ours (another client's republish of a message with headers): the general loop.
    const extra = bytes(
      "NATS/1.0\r\nNats-Stream: FANOUT_CHANNELS\r\nNats-Subject: ev.a.x\r\nNats-Sequence: 6\r\nNats-Time-Stamp: 2026-11-22T18:02:18Z\r\nNats-Last-Sequence: 4\r\nX-Trace: 1\r\n\r\n",
    );
    expect(parseJsHeaders(extra, extra.length)).toMatchObject({ subject: "ev.a.x", seq: 6, last: 4 });
    const nf = bytes("NATS/1.0 404 Message Not Found\r\n\r\n");
    expect(parseJsHeaders(nf, nf.length)).toMatchObject({ code: 404, description: "Message Not Found" });
    const timeout = bytes("NATS/1.0 408 Request Timeout\r\n\r\n");
    expect(parseJsHeaders(Buffer.concat([bytes("xyz"), timeout]), 3 + timeout.length, 3)).toMatchObject({ code: 408, description: "Request Timeout" });
  });

  it("js headers — timestamps: µs precision, whatever the number of fraction digits, same as the text parser", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 4_102_444_799_999 }),
        fc.integer({ min: 0, max: 999_999_999 }),
        fc.integer({ min: 0, max: 9 }),
        (ms, ns, digits) => {
          const base = new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19);
          const frac = String(ns).padStart(9, "0").slice(0, digits).replace(/0+$/, "");
          const text = `${base}${frac ? `.${frac}` : ""}Z`;
          const b = bytes(text);
          const us = Number(frac.padEnd(6, "0").slice(0, 6) || "0");
          const want = (Date.parse(`${base}Z`) * 1000 + us) / 1000;
          expect(parseTimestampBytes(b, 0, b.length)).toBe(want);
          expect(parseTimestampText(text)).toBe(want);
        },
      ),
      { numRuns: 2_000 },
    );
  });
});
