// The Centrifuge door's Protobuf decoder under random input: random bytes, valid frames cut, flipped and
// spliced, and length prefixes that lie never throw: commands (which the command reader reads without
// throwing) or a bad_request refusal. Every frame of valid commands decodes to those commands, in order.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readCommand } from "../../src/centrifugo/client/commands.js";
import { encodeDelimited } from "../../src/protocol/centrifuge/proto-wire.js";
import { decodeProtoCommands } from "../../src/protocol/centrifuge/protobuf.js";
import { ErrorCode } from "../../src/protocol/codes.js";
import { centrifugeArbitraries } from "../../../scripts/fuzz/centrifuge.mjs";

const RUNS = { numRuns: 400 };

const text = fc.string({ minLength: 1, maxLength: 20 });
const json = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)) as unknown);
const uint = fc.integer({ min: 1, max: 2 ** 32 - 1 });
/** Commands of every method with every field set (proto3 leaves defaults out, so none are generated). */
const body = fc.oneof(
  fc.record({ connect: fc.record({ token: text, data: json, name: text, version: text, headers: fc.dictionary(text, text, { minKeys: 1, maxKeys: 3 }) }) }),
  fc.record({
    subscribe: fc.record({
      channel: text,
      token: text,
      recover: fc.constant(true),
      epoch: text,
      offset: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      data: json,
      positioned: fc.constant(true),
      recoverable: fc.constant(true),
      join_leave: fc.constant(true),
      delta: text,
    }),
  }),
  fc.record({ unsubscribe: fc.record({ channel: text }) }),
  fc.record({ publish: fc.record({ channel: text, data: json }) }),
  fc.record({ presence: fc.record({ channel: text }) }),
  fc.record({ presence_stats: fc.record({ channel: text }) }),
  fc.record({
    history: fc.record({
      channel: text,
      limit: fc.integer({ min: -1, max: 1_000 }).filter((n) => n !== 0),
      since: fc.record({ offset: uint, epoch: text }),
      reverse: fc.constant(true),
    }),
  }),
  fc.record({ rpc: fc.record({ data: json, method: text }) }),
  fc.record({ send: fc.record({ data: json }) }),
  fc.record({ refresh: fc.record({ token: text }) }),
  fc.record({ sub_refresh: fc.record({ channel: text, token: text }) }),
);
const command = fc.tuple(uint, body).map(([id, b]) => ({ id, ...b }));
const frame = fc.array(command, { maxLength: 8 });
const bytesOf = (cs: readonly object[]): Buffer => Buffer.concat(cs.map((c) => encodeDelimited("Command", c)));

/** The decoder's answer is commands the reader reads without throwing, or a bad_request with a message. */
function decodesSafely(bytes: Uint8Array): void {
  const d = decodeProtoCommands(bytes);
  if (!d.ok) {
    expect(d.code).toBe(ErrorCode.BadRequest);
    expect(typeof d.message).toBe("string");
    return;
  }
  for (const raw of d.value as unknown[]) expect(typeof readCommand(raw)).toBe("object");
}

describe("fuzz — centrifuge Protobuf", () => {
  it("every frame of valid commands decodes to those commands, in order", () => {
    fc.assert(
      fc.property(frame, (cs) => {
        const d = decodeProtoCommands(bytesOf(cs));
        expect(d.ok).toBe(true);
        if (d.ok) expect(d.value).toEqual(cs);
      }),
      RUNS,
    );
  });

  it("random bytes never throw", () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), decodesSafely), { numRuns: 2_000 });
  });

  it("valid frames cut, flipped and spliced never throw", () => {
    const mutated = fc
      .tuple(frame, fc.nat(), fc.nat(255), fc.uint8Array({ maxLength: 12 }), fc.constantFrom("cut", "flip", "splice"))
      .map(([cs, at, b, junk, how]) => {
        const bytes = bytesOf(cs.length > 0 ? cs : [{ id: 1, connect: {} }]);
        const i = at % bytes.length;
        if (how === "cut") return bytes.subarray(0, i);
        if (how === "flip") return Uint8Array.from(bytes, (x, j) => (j === i ? x ^ (b || 1) : x));
        return Buffer.concat([bytes.subarray(0, i), junk, bytes.subarray(i)]);
      });
    fc.assert(fc.property(mutated, decodesSafely), RUNS);
  });

  it("a length prefix longer than the frame is refused, whatever follows it", () => {
    fc.assert(
      fc.property(frame, fc.integer({ min: 1, max: 2 ** 31 }), (cs, extra) => {
        const rest = bytesOf(cs);
        const len = rest.length + extra;
        const prefix: number[] = [];
        for (let n = len; ; n = Math.floor(n / 128)) {
          prefix.push(n > 0x7f ? (n % 128) | 0x80 : n);
          if (n <= 0x7f) break;
        }
        const d = decodeProtoCommands(Buffer.concat([Uint8Array.from(prefix), rest]));
        expect(d).toMatchObject({ ok: false, code: ErrorCode.BadRequest, message: `a length of ${len} bytes is more than the ${rest.length} left` });
      }),
      RUNS,
    );
  });

  it("lengths that lie — negative, huge, longer than the frame, or a nested field longer than its parent — are refused", () => {
    const { lyingFrame } = centrifugeArbitraries({ encodeDelimited });
    fc.assert(
      fc.property(lyingFrame, ({ bytes }) => {
        const d = decodeProtoCommands(bytes);
        expect(d).toMatchObject({ ok: false, code: ErrorCode.BadRequest });
        if (!d.ok) expect(d.message).toMatch(/^a length of \d+ bytes is more than the \d+ left$/);
      }),
      RUNS,
    );
  });
});
