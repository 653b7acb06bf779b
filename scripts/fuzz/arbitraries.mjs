// fast-check generators of client input, shared by the fuzz script (scripts/fuzz.mjs, a million inputs)
// and the short runs in the test suite (gateway/test/fuzz/). Plain ESM so both can import it.
import fc from "fast-check";

const TOKEN_CHARS = fc.constantFrom(..."abcxyzABC019_-:@#é日€", "😀");
/** One valid channel token: no whitespace, control characters, `.`, `*` or `>`. */
export const token = fc.array(TOKEN_CHARS, { minLength: 1, maxLength: 8 }).map((cs) => cs.join(""));
export const channel = fc
  .array(token, { minLength: 1, maxLength: 6 })
  .map((ts) => ts.join("."))
  .filter((c) => !c.startsWith("$"));
export const pattern = fc
  .tuple(fc.array(fc.oneof(token, fc.constant("*")), { minLength: 0, maxLength: 5 }), fc.boolean())
  .map(([ts, gt]) => (ts.length === 0 || gt ? [...ts, ">"] : ts).join("."));
/** Patterns over a tiny alphabet so that permission and subscription literals collide often. */
export const smallPattern = fc
  .tuple(fc.array(fc.constantFrom("a", "b", "*"), { minLength: 0, maxLength: 4 }), fc.boolean())
  .map(([ts, gt]) => (ts.length === 0 || gt ? [...ts, ">"] : ts).join("."));
export const smallChannel = fc.array(fc.constantFrom("a", "b", "z"), { minLength: 1, maxLength: 6 }).map((ts) => ts.join("."));

/** Strings that are often almost channels: valid tokens with bad separators, wildcards, spaces, `$`. */
export const channelish = fc
  .tuple(
    fc.array(
      fc.oneof(
        token,
        fc.constantFrom(
          "",
          "*",
          ">",
          " ",
          "\t",
          "\u0000",
          "\u007f",
          "\u0085",
          "a\u202eb",
          "\u2066",
          "\u200b",
          "\u00ad",
          "\u200d",
          "$",
          "a b",
          "a*",
          ">x",
          "..",
        ),
      ),
      { minLength: 0, maxLength: 20 },
    ),
    fc.constantFrom(".", ".", ".", "", ","),
  )
  .map(([ts, sep]) => ts.join(sep));

const id = fc.oneof(fc.integer(), fc.string({ maxLength: 64 }));
const maybe = (arb) => fc.option(arb, { nil: undefined });
const from = fc.oneof(
  fc.constant("all"),
  fc.record({ seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }) }),
  fc.record({ last: fc.integer({ min: 1, max: 1_000_000 }) }),
  fc.record({ time: fc.integer({ min: 0, max: 4_102_444_800_000 }).map((t) => new Date(t).toISOString()) }),
);
const durable = fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/);
const msgId = fc.stringMatching(/^[\x21-\x7e]{1,128}$/);
const strip = (o) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

const seq = fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER });
const info = fc.jsonValue({ maxDepth: 2 }).filter((v) => v !== null && JSON.stringify(v).length <= 200);

/** Valid frames of each client op (as objects), with its optional fields. */
const FRAMES_OF = {
  sub: [
    fc.record({ op: fc.constant("sub"), id: maybe(id), channel: pattern, from: maybe(from) }).map(strip),
    fc
      .record({
        op: fc.constant("sub"),
        id: maybe(id),
        channel: pattern,
        durable,
        ack: fc.constant(true),
        maxInflight: maybe(fc.integer({ min: 1, max: 10_000 })),
      })
      .map(strip),
    fc.record({ op: fc.constant("sub"), id: maybe(id), channel, presence: fc.constantFrom(true, "member"), info: maybe(info) }).map(strip),
    fc.record({ op: fc.constant("sub"), id: maybe(id), channel, presence: fc.constant("watch") }).map(strip),
  ],
  unsub: [fc.record({ op: fc.constant("unsub"), id: maybe(id), channel: pattern }).map(strip)],
  pub: [fc.record({ op: fc.constant("pub"), id: maybe(id), channel, data: fc.jsonValue({ maxDepth: 3 }), msgId: maybe(msgId) }).map(strip)],
  ping: [fc.record({ op: fc.constant("ping"), id: maybe(id) }).map(strip)],
  ack: [fc.record({ op: fc.constant("ack"), id: maybe(id), seq, sub: maybe(pattern) }).map(strip)],
  term: [fc.record({ op: fc.constant("term"), id: maybe(id), seq, sub: maybe(pattern) }).map(strip)],
  inprogress: [fc.record({ op: fc.constant("inprogress"), id: maybe(id), seq, sub: maybe(pattern) }).map(strip)],
  nak: [
    fc
      .record({ op: fc.constant("nak"), id: maybe(id), seq: fc.integer({ min: 1, max: 2 ** 40 }), delay: maybe(fc.integer({ min: 0, max: 3_600_000 })) })
      .map(strip),
  ],
  presence: [fc.record({ op: fc.constant("presence"), id: maybe(id), channel }).map(strip)],
  refresh: [fc.record({ op: fc.constant("refresh"), id: maybe(id), token: fc.string({ minLength: 1, maxLength: 200 }) }).map(strip)],
  sub_refresh: [fc.record({ op: fc.constant("sub_refresh"), id: maybe(id), channel, token: fc.string({ minLength: 1, maxLength: 200 }) }).map(strip)],
  rpc: [fc.record({ op: fc.constant("rpc"), id, method: channel, data: fc.jsonValue({ maxDepth: 3 }) }).map(strip)],
};
const FIELDS = [
  "op",
  "id",
  "channel",
  "from",
  "durable",
  "ack",
  "maxInflight",
  "presence",
  "info",
  "data",
  "msgId",
  "ttl",
  "batch",
  "seq",
  "delay",
  "sub",
  "token",
  "method",
];

/**
 * The frame generators for the parser's ops (`CLIENT_OPS` of gateway/src/protocol/frames.ts, passed in by the
 * caller: the unit test from the sources, scripts/fuzz.mjs from dist/). An op of the parser without a
 * generator here, or a generator of an op the parser does not have, is an error: the lists cannot drift.
 */
export function frameArbitraries(ops) {
  const missing = ops.filter((op) => !(op in FRAMES_OF));
  const extra = Object.keys(FRAMES_OF).filter((op) => !ops.includes(op));
  if (missing.length > 0 || extra.length > 0)
    throw new Error(`fuzz generators and the parser's ops differ: no generator for [${missing}], no such op [${extra}]`);

  /** Valid client frames (as objects), each op with its optional fields. */
  const validFrame = fc.oneof(...ops.flatMap((op) => FRAMES_OF[op]));

  /** Objects with the right field names and anything as values: exercises every validation branch. */
  const wrongObject = fc.dictionary(
    fc.constantFrom(...FIELDS, "__proto__", "constructor", "x"),
    fc.oneof(fc.constantFrom(...ops), channelish, fc.anything({ maxDepth: 2 })),
    { maxKeys: 8 },
  );

  /** Text of one client frame that is often wrong: random text, JSON that is not a frame, broken valid frames. */
  const malformedText = fc.oneof(
    fc.string({ maxLength: 200 }),
    fc.string({ unit: "binary", maxLength: 100 }),
    fc.json({ maxDepth: 3 }),
    wrongObject.map((o) => JSON.stringify(o)),
    fc.tuple(validFrame, fc.nat(), fc.string({ maxLength: 3 })).map(([f, at, ins]) => {
      const s = JSON.stringify(f);
      const i = at % (s.length + 1);
      return s.slice(0, i) + ins + s.slice(i + 1);
    }),
    fc.tuple(validFrame, fc.nat()).map(([f, at]) => JSON.stringify(f).slice(0, at % 60)),
    fc.nat({ max: 5_000 }).map((n) => "[".repeat(n) + "]".repeat(n)),
    fc.constantFrom(
      '{"op":"sub","channel":"a","from":{"seq":1e400}}',
      '{"op":"pub","channel":"a"}',
      '{"op":null}',
      '{"op":"sub","id":1e309}',
      "\uFEFF{}",
      '{"op":"ping","id":"' + "x".repeat(65) + '"}',
      '{"__proto__":{"op":"ping"}}',
    ),
  );

  /** Any input text: valid frames (serialized) and malformed text, mixed. */
  const anyFrameText = fc.oneof(
    validFrame.map((f) => JSON.stringify(f)),
    malformedText,
  );
  return { validFrame, malformedText, anyFrameText };
}
