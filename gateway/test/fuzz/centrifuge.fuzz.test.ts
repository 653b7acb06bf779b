// The Centrifuge door's decoders under random input: the JSON lines decoder and the command reader never
// throw, refuse with a typed code, and give back every command a client could send, in order.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { readCommand } from "../../src/centrifugo/client/commands.js";
import { decodeCommands, MAX_COMMANDS_PER_FRAME } from "../../src/protocol/centrifuge/json.js";
import { requestId, requestOf } from "../../src/protocol/centrifuge/requests.js";
import { ErrorCode } from "../../src/protocol/codes.js";

const RUNS = { numRuns: 2_000 };
/** The frame properties build larger values: fewer runs keep the file within the unit tier's seconds. */
const FRAME_RUNS = { numRuns: 400 };
const CODES = new Set<string>(Object.values(ErrorCode));
const METHODS = ["connect", "subscribe", "unsubscribe", "publish", "presence", "presence_stats", "history", "rpc", "send", "refresh", "sub_refresh"];

/** Commands as the SDKs send them, and nearby shapes: ids of every kind, methods with odd bodies, several at once. */
const command = fc.record(
  {
    id: fc.oneof(fc.integer({ min: -2, max: 2 ** 32 + 1 }), fc.double(), fc.string(), fc.constant(null)),
    ...Object.fromEntries(METHODS.map((m) => [m, fc.oneof(fc.object({ maxDepth: 2 }), fc.jsonValue({ maxDepth: 2 }))])),
  },
  { requiredKeys: [] },
);
/** Text with newlines, blank lines, partial JSON and control characters. */
const frameText = fc.oneof(
  fc.array(command, { maxLength: 8 }).map((cs) => cs.map((c) => JSON.stringify(c)).join("\n")),
  fc.array(fc.oneof(fc.string(), fc.constant(""), fc.constant("{}"), fc.constant("\n")), { maxLength: 8 }).map((l) => l.join("\n")),
  fc.string({ unit: "binary", maxLength: 200 }),
);

describe("fuzz — centrifuge JSON lines", () => {
  it("the decoder and the command reader never throw: commands or a typed refusal", () => {
    fc.assert(
      fc.property(frameText, (text: string) => {
        const d = decodeCommands(text);
        if (!d.ok) {
          expect(CODES.has(d.code)).toBe(true);
          expect(typeof d.message).toBe("string");
          return;
        }
        expect(Array.isArray(d.value)).toBe(true);
        for (const raw of d.value as unknown[]) {
          const c = readCommand(raw);
          if ("bad" in c) {
            expect(typeof c.bad).toBe("string");
            if (c.id !== undefined) expect(Number.isInteger(c.id) && c.id >= 1).toBe(true);
          } else expect([...METHODS, "pong"]).toContain(c.method);
        }
      }),
      FRAME_RUNS,
    );
  });

  it("every frame of JSON objects decodes to those objects, in order, up to the bound", () => {
    fc.assert(
      fc.property(fc.array(fc.object({ maxDepth: 3 }), { maxLength: 20 }), fc.boolean(), (objs, trailing) => {
        const text = objs.map((o) => JSON.stringify(o)).join("\n") + (trailing ? "\n" : "");
        const d = decodeCommands(text);
        expect(d.ok).toBe(true);
        if (d.ok) expect(d.value).toEqual(JSON.parse(`[${objs.map((o) => JSON.stringify(o)).join(",")}]`));
      }),
      FRAME_RUNS,
    );
    expect(
      decodeCommands(
        Array(MAX_COMMANDS_PER_FRAME + 1)
          .fill("{}")
          .join("\n"),
      ).ok,
    ).toBe(false);
  });

  it("request ids: every request survives, nothing else is taken for one", () => {
    const request = fc.oneof(
      fc.record({ kind: fc.constantFrom("unsubscribe", "publish", "rpc", "refresh" as const), id: fc.integer({ min: 1, max: 2 ** 32 - 1 }) }),
      fc.record({
        kind: fc.constant("subscribe" as const),
        id: fc.integer({ min: 1, max: 2 ** 32 - 1 }),
        mode: fc.constantFrom("live", "positioned", "recovered", "unrecovered" as const),
        offset: fc.maxSafeNat(),
      }),
    );
    fc.assert(
      fc.property(request, (r) => {
        expect(requestOf(requestId(r))).toEqual(r);
      }),
      RUNS,
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 64 }), (s) => {
        const r = requestOf(s);
        if (r !== undefined) expect(s.startsWith("cf")).toBe(true);
      }),
      RUNS,
    );
  });
});
