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
    fc.array(fc.oneof(token, fc.constantFrom("", "*", ">", " ", "\t", "\u0000", "\u007f", "$", "a b", "a*", ">x", "..")), { minLength: 0, maxLength: 20 }),
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

/** Valid client frames (as objects), each op with its optional fields. */
export const validFrame = fc.oneof(
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
  fc.record({ op: fc.constant("unsub"), id: maybe(id), channel: pattern }).map(strip),
  fc.record({ op: fc.constant("pub"), id: maybe(id), channel, data: fc.jsonValue({ maxDepth: 3 }), msgId: maybe(msgId) }).map(strip),
  fc.record({ op: fc.constant("ping"), id: maybe(id) }).map(strip),
  fc.record({ op: fc.constantFrom("ack", "term"), id: maybe(id), seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), sub: maybe(pattern) }).map(strip),
  fc
    .record({ op: fc.constant("nak"), id: maybe(id), seq: fc.integer({ min: 1, max: 2 ** 40 }), delay: maybe(fc.integer({ min: 0, max: 3_600_000 })) })
    .map(strip),
  fc.record({ op: fc.constant("refresh"), id: maybe(id), token: fc.string({ minLength: 1, maxLength: 200 }) }).map(strip),
);

const OPS = ["sub", "unsub", "pub", "ping", "ack", "nak", "term", "refresh"];
const FIELDS = ["op", "id", "channel", "from", "durable", "ack", "maxInflight", "data", "msgId", "seq", "delay", "sub", "token"];
/** Objects with the right field names and anything as values: exercises every validation branch. */
const wrongObject = fc.dictionary(
  fc.constantFrom(...FIELDS, "__proto__", "constructor", "x"),
  fc.oneof(fc.constantFrom(...OPS), channelish, fc.anything({ maxDepth: 2 })),
  { maxKeys: 8 },
);

/** Text of one client frame that is often wrong: random text, JSON that is not a frame, broken valid frames. */
export const malformedText = fc.oneof(
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
export const anyFrameText = fc.oneof(
  validFrame.map((f) => JSON.stringify(f)),
  malformedText,
);
