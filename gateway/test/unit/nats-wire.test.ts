import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { MAX_CONTROL_LINE, WireProtocolError, WireReader, type WireHandler } from "../../src/broker/jetstream/direct/nats-wire.js";

/** Every event the reader reports, as text (payloads and headers included byte for byte). */
function recorder(): { events: string[]; h: WireHandler } {
  const events: string[] = [];
  const h: WireHandler = {
    msg: (b, s, se, hs, ps, e) => events.push(`msg ${b.toString("latin1", s, se)} [${b.toString("latin1", hs, ps)}] ${b.toString("latin1", ps, e)}`),
    ping: () => events.push("ping"),
    pong: () => events.push("pong"),
    info: (j) => events.push(`info ${j}`),
    err: (t) => events.push(`err ${t}`),
  };
  return { events, h };
}

/** Feeds `wire` cut at the given offsets and returns the events. */
function read(wire: Buffer, cuts: number[]): string[] {
  const r = recorder();
  const reader = new WireReader(r.h);
  let at = 0;
  for (const c of [...cuts.filter((x) => x > 0 && x < wire.length).sort((a, b) => a - b), wire.length]) {
    if (c > at) reader.feed(Buffer.from(wire.subarray(at, c)));
    at = c;
  }
  return r.events;
}

const HDR = "NATS/1.0\r\nNats-Stream: FANOUT_CHANNELS\r\nNats-Subject: ev.a\r\nNats-Sequence: 7\r\n\r\n";
const SAMPLE = Buffer.from(
  'INFO {"server_id":"x","headers":true}\r\n' +
    "PING\r\n" +
    "+OK\r\n" +
    "MSG _INBOX.ab.1 1 5\r\nhello\r\n" +
    `HMSG _INBOX.ab.2 1 ${HDR.length} ${HDR.length + 12}\r\n${HDR}{"x":"\r\n.."}\r\n` +
    "MSG _INBOX.ab.3 1 _INBOX.reply 0\r\n\r\n" +
    "PONG\r\n" +
    "-ERR 'Permissions Violation for Publish to \"x\"'\r\n",
  "latin1",
);
const EXPECTED = [
  'info {"server_id":"x","headers":true}',
  "ping",
  "msg _INBOX.ab.1 [] hello",
  `msg _INBOX.ab.2 [${HDR}] {"x":"\r\n.."}`,
  "msg _INBOX.ab.3 [] ",
  "pong",
  'err Permissions Violation for Publish to "x"',
];

describe("NATS wire reader", () => {
  it("nats wire — every operation the server sends, read from one chunk", () => {
    expect(read(SAMPLE, [])).toEqual(EXPECTED);
  });

  it("nats wire — the same events wherever the chunks are cut (every single cut, and byte by byte)", () => {
    for (let cut = 1; cut < SAMPLE.length; cut++) expect(read(SAMPLE, [cut])).toEqual(EXPECTED);
    expect(
      read(
        SAMPLE,
        Array.from({ length: SAMPLE.length }, (_, i) => i),
      ),
    ).toEqual(EXPECTED);
  });

  it("nats wire — any sequence of messages with any payload bytes, cut anywhere", () => {
    const message = fc.record({
      token: fc.stringMatching(/^[a-z0-9]{1,8}$/),
      headers: fc.option(fc.uint8Array({ maxLength: 60 }), { nil: undefined }),
      payload: fc.uint8Array({ maxLength: 300 }),
    });
    fc.assert(
      fc.property(fc.array(message, { minLength: 1, maxLength: 12 }), fc.array(fc.nat(4_000), { maxLength: 20 }), (msgs, cuts) => {
        const parts: Buffer[] = [];
        const expected: string[] = [];
        for (const m of msgs) {
          const p = Buffer.from(m.payload);
          if (m.headers) {
            const h = Buffer.from(m.headers);
            parts.push(Buffer.from(`HMSG _I.${m.token} 9 ${h.length} ${h.length + p.length}\r\n`), h, p, Buffer.from("\r\n"));
            expected.push(`msg _I.${m.token} [${h.toString("latin1")}] ${p.toString("latin1")}`);
          } else {
            parts.push(Buffer.from(`MSG _I.${m.token} 9 ${p.length}\r\n`), p, Buffer.from("\r\n"));
            expected.push(`msg _I.${m.token} [] ${p.toString("latin1")}`);
          }
        }
        expect(read(Buffer.concat(parts), cuts)).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });

  it("nats wire — a 1 MiB message arriving in 64 KiB chunks is joined once, whole", () => {
    const payload = Buffer.alloc(1 << 20, 0x61);
    payload.write("\r\nMSG fake 1 3\r\n", 1000);
    const wire = Buffer.concat([Buffer.from(`MSG _I.big 1 ${payload.length}\r\n`), payload, Buffer.from("\r\nPING\r\n")]);
    const cuts = Array.from({ length: Math.ceil(wire.length / 65_536) }, (_, i) => i * 65_536);
    const r = recorder();
    let got: Buffer | undefined;
    const reader = new WireReader({ ...r.h, msg: (b, _s, _se, _hs, ps, e) => (got = Buffer.from(b.subarray(ps, e))) });
    for (let i = 0; i < cuts.length; i++) reader.feed(wire.subarray(cuts[i], cuts[i + 1] ?? wire.length));
    expect(got?.equals(payload)).toBe(true);
    expect(r.events).toEqual(["ping"]);
  });

  it("nats wire — bytes that are not the protocol are refused with the line that broke it", () => {
    const bad = (s: string) => () => new WireReader(recorder().h).feed(Buffer.from(s));
    expect(bad("HELLO\r\n")).toThrow(WireProtocolError);
    expect(bad("HELLO\r\n")).toThrow(/unexpected protocol line: "HELLO"/);
    expect(bad("MSG a 1 x\r\n")).toThrow(WireProtocolError);
    expect(bad("HMSG a 1 10 5\r\n")).toThrow(WireProtocolError); // headers longer than the message
    expect(bad("MSG  1 3\r\nabc\r\n")).toThrow(WireProtocolError); // no subject
    expect(bad("MSG a 1 3\r\nabcd\r\n")).toThrow(/not followed by CRLF/);
    expect(bad("PING" + "x".repeat(MAX_CONTROL_LINE + 1))).toThrow(/control line longer/);
  });
});
