// PubAcks read from their bytes must mean exactly what JSON.parse makes of them, fast path or not.
import { describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { parsePubAck } from "../../src/broker/jetstream/pub-ack.js";

const bytes = (s: string) => Buffer.from(s);
const same = (s: string) => expect(parsePubAck(bytes(s))).toEqual(JSON.parse(s));

describe("pub-ack", () => {
  it("pub-ack — nats-server's layouts: plain, duplicate, with a domain", () => {
    same('{"stream":"FANOUT_CHANNELS","seq":1}');
    same('{"stream":"FANOUT_CHANNELS","seq":9007199254740991,"duplicate":true}');
    same('{"stream":"FANOUT_CHANNELS_CHAT","domain":"hub","seq":42}');
  });

  it("pub-ack — the server's usual layout is read without JSON.parse", () => {
    const spy = vi.spyOn(JSON, "parse");
    try {
      expect(parsePubAck(bytes('{"stream":"FANOUT_CHANNELS","seq":77,"duplicate":true}'))).toEqual({ stream: "FANOUT_CHANNELS", seq: 77, duplicate: true });
      expect(parsePubAck(bytes('{"stream":"FANOUT_CHANNELS","seq":78}'))).toEqual({ stream: "FANOUT_CHANNELS", seq: 78 });
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it("pub-ack — errors and unknown layouts go through JSON.parse", () => {
    same('{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"},"stream":"FANOUT_CHANNELS","seq":0}');
    same('{"stream":"FANOUT_CHANNELS","seq":5,"duplicate":false}');
    same('{"stream":"FANOUT_CHANNELS","seq":5,"val":"1"}');
    same('{"stream":"ünï","seq":3}');
    expect(() => parsePubAck(bytes('{"stream":"E","seq":'))).toThrow();
  });

  it("pub-ack — any stream name, seq, domain and duplicate flag reads as JSON.parse does", () => {
    const ack = fc.record(
      {
        stream: fc.string({ minLength: 1, maxLength: 40 }),
        domain: fc.string({ maxLength: 10 }),
        seq: fc.maxSafeInteger().filter((n) => n >= 0),
        duplicate: fc.boolean(),
        error: fc.record({ code: fc.integer({ min: 400, max: 599 }), description: fc.string() }),
      },
      { requiredKeys: ["stream", "seq"] },
    );
    fc.assert(
      fc.property(ack, (a) => {
        same(JSON.stringify(a));
      }),
      { numRuns: 2_000 },
    );
  });
});
