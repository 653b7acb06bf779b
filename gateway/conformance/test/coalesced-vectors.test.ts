// The shared coalesced-frame vectors (vectors/coalesced-frames.json): the committed file is what the gateway's
// coalescer and codecs write now, and their bytes hold exactly the frames the vectors expect, split as
// PROTOCOL.md "Coalesced frames" says (JSON at each `}` LF `{`, MessagePack as one array).
import { readFileSync } from "node:fs";
import { decode } from "@msgpack/msgpack";
import { describe, expect, it } from "vitest";
import { FramePage } from "../../src/fanout/replay-cache.js";
import { JSON_CODEC, MSGPACK_CODEC } from "../../src/protocol/codecs.js";
import { coalescedText, coalescedVectors, MANY, windowFrame, type CoalescedVectors } from "../coalesced-vectors.js";

const committed = readFileSync(new URL("../vectors/coalesced-frames.json", import.meta.url), "utf8");
const vectors = JSON.parse(committed) as CoalescedVectors;

/** `{"$bytes": hex}` values as the bytes a MessagePack decoder gives for a bin. */
function withBytes(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withBytes);
  if (v && typeof v === "object") {
    const b = (v as { $bytes?: unknown }).$bytes;
    if (typeof b === "string") return new Uint8Array(Buffer.from(b, "hex"));
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, withBytes(x)]));
  }
  return v;
}

describe("coalesced vectors — the shared coalesced-frame vectors", () => {
  it("coalesced vectors — the committed file is what the gateway's coalescer and codecs write now (else: npm run vectors:coalesced)", () => {
    expect(committed).toBe(coalescedText(coalescedVectors()));
  });

  it("coalesced vectors — cover a pretty-printed payload, a binary one with a type, and a window of one", () => {
    const [many, one] = vectors.json;
    expect(many?.frames).toHaveLength(3);
    expect(many?.text.split("\n").length).toBeGreaterThan(3);
    expect(many?.frames.some((f) => f.enc === "base64" && typeof f.type === "string")).toBe(true);
    expect(vectors.msgpack[0]?.frames.some((f) => f.enc === "binary" && typeof f.type === "string")).toBe(true);
    expect(one?.frames).toHaveLength(1);
    expect(one?.text.startsWith("{")).toBe(true);
    expect(vectors.msgpack[1]?.hex.startsWith("8")).toBe(true); // a fixmap: the plain msg frame, no array
    expect(vectors.msgpack[0]?.hex.startsWith("93")).toBe(true); // a fixarray of 3
    const sixteenPlus = vectors.msgpack.find((v) => v.frames.length > 15);
    expect(sixteenPlus?.hex.startsWith(`dc${sixteenPlus.frames.length.toString(16).padStart(4, "0")}`)).toBe(true); // array 16
    expect(vectors.json.find((v) => v.frames.length > 15)?.text.split("}\n{")).toHaveLength(sixteenPlus?.frames.length ?? -1);
  });

  it("coalesced vectors — a catch-up page of the same messages sends the same coalesced frame as a window", () => {
    const stored = MANY.map((m) => ({ channel: m.meta.channel, seq: m.meta.seq, ts: m.meta.ts, payload: m.payload }));
    const page = new FramePage("scores.*", MANY[0]!.meta.seq, MANY.at(-1)!.meta.seq, stored, () => undefined);
    for (const codec of [JSON_CODEC, MSGPACK_CODEC]) {
      const run = page.coalesced(codec, 0, MANY.length);
      expect(run.end).toBe(MANY.length);
      expect(Buffer.from(run.frame).toString("hex")).toBe(Buffer.from(windowFrame(codec, MANY)).toString("hex"));
    }
  });

  it.each(vectors.json.map((v) => [v.name, v] as const))("coalesced vectors — the JSON frame splits into its frames: %s", (_, v) => {
    const parts = v.text.split("}\n{").map((p, i, all) => (i > 0 ? "{" : "") + p + (i < all.length - 1 ? "}" : ""));
    expect(parts.map((p) => JSON.parse(p) as unknown)).toEqual(v.frames);
  });

  it.each(vectors.msgpack.map((v) => [v.name, v] as const))("coalesced vectors — the MessagePack frame holds its frames: %s", (_, v) => {
    const value = decode(new Uint8Array(Buffer.from(v.hex, "hex")));
    const frames = v.frames.length === 1 ? [value] : value;
    expect(frames).toEqual(withBytes(v.frames));
  });
});
