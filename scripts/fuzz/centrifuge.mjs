// The fuzz run's targets for the Centrifuge door's decoders (docs/centrifugo.md, "Limits of the Protobuf
// decoder"): the JSON lines decoder and the Protobuf decoder, each followed by the command reader. Neither may
// throw; each answers commands the reader reads, or a typed refusal. Protobuf frames whose lengths lie are
// always refused: a length prefix longer than the frame, one that is negative (a 10-byte varint of a
// negative int64), one beyond 2^53, and a nested field's length longer than its parent though inside the frame.
import fc from "fast-check";

const METHODS = ["connect", "subscribe", "unsubscribe", "publish", "presence", "presence_stats", "history", "rpc", "send", "refresh", "sub_refresh"];

const text = fc.string({ minLength: 1, maxLength: 16 });
const json = fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.parse(JSON.stringify(v)));
const uint = fc.integer({ min: 1, max: 2 ** 32 - 1 });

/** Protobuf commands of every method with their fields set (proto3 leaves defaults out). */
const protoBody = fc.oneof(
  fc.record({ connect: fc.record({ token: text, data: json, name: text, version: text }) }),
  fc.record({
    subscribe: fc.record({ channel: text, token: text, recover: fc.constant(true), epoch: text, offset: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }) }),
  }),
  fc.record({ unsubscribe: fc.record({ channel: text }) }),
  fc.record({ publish: fc.record({ channel: text, data: json }) }),
  fc.record({ presence: fc.record({ channel: text }) }),
  fc.record({ history: fc.record({ channel: text, limit: fc.integer({ min: 1, max: 1_000 }), since: fc.record({ offset: uint, epoch: text }) }) }),
  fc.record({ rpc: fc.record({ data: json, method: text }) }),
  fc.record({ refresh: fc.record({ token: text }) }),
  fc.record({ sub_refresh: fc.record({ channel: text, token: text }) }),
);
const protoCommand = fc.tuple(uint, protoBody).map(([id, b]) => ({ id, ...b }));

/** A varint's bytes; `n` a bigint so that lengths beyond 2^53 and negative int64s (as uint64) can be written. */
function varint(n) {
  let v = BigInt.asUintN(64, BigInt(n));
  const out = [];
  while (v > 0x7fn) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Uint8Array.from(out);
}

const concat = (parts) => Buffer.concat(parts.map((p) => Buffer.from(p)));

/**
 * @param {{ encodeDelimited: (name: string, o: object) => Buffer }} wire the gateway's proto-wire
 * @returns the arbitraries: `jsonFrame` (text), `protoFrame` (bytes, any), `lyingFrame` ({ bytes, why })
 */
export function centrifugeArbitraries({ encodeDelimited }) {
  const framed = (cs) => concat(cs.map((c) => encodeDelimited("Command", c)));
  const valid = fc.array(protoCommand, { maxLength: 6 }).map(framed);
  const nonEmpty = fc.array(protoCommand, { minLength: 1, maxLength: 6 }).map(framed);

  const jsonCommand = fc.record(
    {
      id: fc.oneof(fc.integer({ min: -2, max: 2 ** 32 + 1 }), fc.double(), fc.string(), fc.constant(null)),
      ...Object.fromEntries(METHODS.map((m) => [m, fc.oneof(fc.object({ maxDepth: 1, maxKeys: 4 }), fc.jsonValue({ maxDepth: 1 }))])),
    },
    { requiredKeys: [] },
  );
  const jsonFrame = fc.oneof(
    fc.array(jsonCommand, { maxLength: 8 }).map((cs) => cs.map((c) => JSON.stringify(c)).join("\n")),
    fc.array(fc.oneof(fc.string(), fc.constant(""), fc.constant("{}"), fc.constant("\n")), { maxLength: 8 }).map((l) => l.join("\n")),
    fc.string({ unit: "binary", maxLength: 200 }),
  );

  const mutated = fc
    .tuple(nonEmpty, fc.nat(), fc.nat(255), fc.uint8Array({ maxLength: 12 }), fc.constantFrom("cut", "flip", "splice"))
    .map(([bytes, at, b, junk, how]) => {
      const i = at % bytes.length;
      if (how === "cut") return bytes.subarray(0, i);
      if (how === "flip") return Uint8Array.from(bytes, (x, j) => (j === i ? x ^ (b || 1) : x));
      return concat([bytes.subarray(0, i), junk, bytes.subarray(i)]);
    });
  const protoFrame = fc.oneof(valid, mutated, fc.uint8Array({ maxLength: 300 }));

  /** Valid commands, then one message whose length lies, then (sometimes) more valid bytes. */
  const lie = fc.oneof(
    // Longer than what is left of the frame (what follows counts as left).
    fc.tuple(valid, fc.integer({ min: 1, max: 2 ** 31 })).map(([rest, extra]) => ({ prefix: varint(rest.length + extra), rest, why: "longer than the frame" })),
    // Negative: an int64 below 0 written as the 10-byte varint a sender of a signed length would write.
    fc.tuple(valid, fc.integer({ min: -(2 ** 31), max: -1 })).map(([rest, n]) => ({ prefix: varint(n), rest, why: "negative" })),
    // Huge: beyond 2^53 (not a safe integer) up to 2^64 − 1.
    fc.tuple(valid, fc.bigInt({ min: 2n ** 53n, max: 2n ** 64n - 1n })).map(([rest, n]) => ({ prefix: varint(n), rest, why: "huge" })),
  );
  // A nested length that lies: the Command's own prefix is right, but its connect field (4) says more bytes than the Command holds.
  const nested = fc.tuple(fc.uint8Array({ maxLength: 20 }), fc.integer({ min: 1, max: 2 ** 20 }), valid, uint).map(([inner, extra, after, id]) => {
    const body = concat([[0x08], varint(id), [0x22], varint(inner.length + extra), inner]);
    return { prefix: varint(body.length), rest: concat([body, after]), why: "nested longer than its parent" };
  });
  const lyingFrame = fc
    .tuple(valid, fc.oneof(lie, nested))
    .map(([before, l]) => ({ bytes: concat([before, l.prefix, l.rest]), why: l.why, nested: l.why.startsWith("nested") }));
  return { jsonFrame, protoFrame, lyingFrame };
}

/**
 * The targets' checks, given the gateway's modules from dist/.
 * @returns {[string, number, fc.Arbitrary<unknown>, (x: any) => void][]}
 */
export function centrifugeTargets({ decodeCommands, decodeProtoCommands, readCommand, encodeDelimited, ErrorCode }, assert) {
  const { jsonFrame, protoFrame, lyingFrame } = centrifugeArbitraries({ encodeDelimited });
  const CODES = new Set(Object.values(ErrorCode));
  /** Commands the reader reads (a command or a named reason), or a typed refusal. */
  const readable = (d, what) => {
    if (!d.ok) {
      assert(CODES.has(d.code) && typeof d.message === "string", `untyped refusal for ${what}`);
      return;
    }
    for (const raw of d.value) {
      const c = readCommand(raw);
      assert("bad" in c ? typeof c.bad === "string" : [...METHODS, "pong"].includes(c.method), `unreadable command from ${what}`);
    }
  };
  const hex = (b) => Buffer.from(b).toString("hex").slice(0, 400);
  return [
    [
      "centrifuge JSON lines decoder + command reader: never throw, commands or a typed refusal",
      0.05,
      jsonFrame,
      (t) => readable(decodeCommands(t), JSON.stringify(t)),
    ],
    [
      "centrifuge Protobuf decoder + command reader: never throw on random, cut, flipped or spliced frames",
      0.1,
      protoFrame,
      (b) => readable(decodeProtoCommands(b), hex(b)),
    ],
    [
      "centrifuge Protobuf decoder: lengths that lie (longer than the frame, negative, huge, nested) are refused",
      0.05,
      lyingFrame,
      ({ bytes, why }) => {
        const d = decodeProtoCommands(bytes);
        assert(
          !d.ok && d.code === ErrorCode.BadRequest && /^a length of \d+ bytes is more than the \d+ left$/.test(d.message),
          `${why} length not refused: ${hex(bytes)}`,
        );
      },
    ],
  ];
}
