// The shared Fossil delta vectors (vectors/fossil.json): a base, a target and the delta the TypeScript library
// (fossil-delta, the one the server creates deltas with) makes from them. Both SDKs' appliers read the file:
// each case's delta applied to its base must give its target, and each broken delta must be refused.
// `npm run vectors:fossil` writes the file (the path is its argument); a unit test fails when it is stale
// (gateway/conformance/test/fossil-vectors.test.ts).
// The realistic document of the cases is also the one `loadtest/bench/deltas.ts` measures.
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { createDelta } from "fossil-delta";
import { rng as seeded } from "../../loadtest/bench/rng.js";

/** Bytes in a vector: text as it is (UTF-8), anything else in base64. */
export type VectorBytes = { text: string } | { base64: string };

export type FossilCase = { name: string; base: VectorBytes; target: VectorBytes; delta: VectorBytes; smaller: boolean };
export type FossilBroken = { name: string; base: VectorBytes; delta: VectorBytes; why: string };
export type FossilVectors = { about: string; cases: FossilCase[]; broken: FossilBroken[] };

type Player = { id: string; name: string; number: number; goals: number; assists: number; minutes: number; rating: number; card: string | null };
/** A live scoreboard: the state channel of issue 36 (about 2 KB of JSON, a few fields change per message). */
export type Scoreboard = {
  match: { id: string; competition: string; venue: string; referee: string; status: string; minute: number; updatedAt: string };
  home: { team: string; score: number; possession: number; shots: number; players: Player[] };
  away: { team: string; score: number; possession: number; shots: number; players: Player[] };
  events: { minute: number; kind: string; player: string }[];
};

const NAMES = ["Ada", "Ben", "Chloé", "Dario", "Emre", "Femi", "Goran", "Hana", "Ivo", "Jun", "Kofi", "Lena", "Mateo", "Noor"];

function players(prefix: string, rnd: () => number): Player[] {
  return Array.from({ length: 8 }, (_, i) => ({
    id: `${prefix}-${i + 1}`,
    name: `${NAMES[Math.floor(rnd() * NAMES.length)]} ${String.fromCharCode(65 + i)}.`,
    number: i + 2,
    goals: 0,
    assists: 0,
    minutes: 0,
    rating: 6 + Math.round(rnd() * 10) / 10,
    card: null,
  }));
}

/** The first document of a match. */
export function scoreboard(seed = 36): Scoreboard {
  const rnd = seeded(seed);
  return {
    match: {
      id: "m-20261125-0042",
      competition: "League Cup",
      venue: "Estádio Municipal",
      referee: "M. Okonkwo",
      status: "live",
      minute: 1,
      updatedAt: "2026-11-25T20:00:00.000Z",
    },
    home: { team: "Harbour City", score: 0, possession: 50, shots: 0, players: players("h", rnd) },
    away: { team: "Northfield", score: 0, possession: 50, shots: 0, players: players("a", rnd) },
    events: [],
  };
}

/** The next document: the minute and clock move, one player's minutes and rating change, sometimes a shot or a goal. */
export function nextScoreboard(prev: Scoreboard, rnd: () => number): Scoreboard {
  const doc = structuredClone(prev);
  doc.match.minute = Math.min(90, doc.match.minute + (rnd() < 0.5 ? 1 : 0));
  doc.match.updatedAt = new Date(Date.parse(doc.match.updatedAt) + 500).toISOString();
  const side = rnd() < 0.5 ? doc.home : doc.away;
  const other = side === doc.home ? doc.away : doc.home;
  side.possession = Math.max(30, Math.min(70, side.possession + (rnd() < 0.5 ? 1 : -1)));
  other.possession = 100 - side.possession;
  const p = side.players[Math.floor(rnd() * side.players.length)]!;
  p.minutes = doc.match.minute;
  p.rating = Math.round((p.rating + (rnd() - 0.5) / 5) * 100) / 100;
  if (rnd() < 0.1) side.shots++;
  if (rnd() < 0.02) {
    side.score++;
    p.goals++;
    doc.events = [...doc.events.slice(-4), { minute: doc.match.minute, kind: "goal", player: p.id }];
  }
  return doc;
}

const utf8 = new TextEncoder();
const bytesOf = (v: VectorBytes): Uint8Array => ("text" in v ? utf8.encode(v.text) : new Uint8Array(Buffer.from(v.base64, "base64")));
/** Text when the bytes are UTF-8 (a reader sees what changed), base64 otherwise. */
function asVector(b: Uint8Array): VectorBytes {
  const text = Buffer.from(b).toString("utf8");
  return Buffer.from(text, "utf8").equals(b) ? { text } : { base64: Buffer.from(b).toString("base64") };
}

function fossilCase(name: string, base: Uint8Array, target: Uint8Array): FossilCase {
  const delta = createDelta(base, target);
  return { name, base: asVector(base), target: asVector(target), delta: asVector(delta), smaller: delta.length < target.length };
}

const seededBytes = (rnd: () => number) => (): number => Math.floor(rnd() * 256);

function randomBytes(n: number, rnd: () => number): Uint8Array {
  return Uint8Array.from({ length: n }, seededBytes(rnd));
}

/** Every vector, computed now with the installed library: what the committed file must equal. */
export function fossilVectors(): FossilVectors {
  const rnd = seeded(7);
  const json = (v: unknown): Uint8Array => utf8.encode(JSON.stringify(v));
  const first = scoreboard();
  let doc = first;
  for (let i = 0; i < 3; i++) doc = nextScoreboard(doc, rnd);
  const later = nextScoreboard(doc, rnd);
  const binary = randomBytes(1_500, rnd);
  const binaryEdited = binary.slice();
  binaryEdited.set([0x00, 0xff, 0x80, 0x7f], 700);
  const large = structuredClone(later);
  large.home.players.reverse();
  for (const p of [...large.home.players, ...large.away.players]) {
    p.rating = Math.round(rnd() * 1_000) / 100;
    p.minutes = 45 + Math.floor(rnd() * 45);
  }
  large.away.team = "Northfield Rovers";
  large.events = [{ minute: 12, kind: "var-review", player: "a-3" }];
  // One UTF-8 character edited whose first byte is the same: the delta copies that byte and inserts the
  // second one alone, so the delta of two UTF-8 texts is not UTF-8 (a JSON frame must carry it in base64).
  const accented = `{"name":"${"abcdefghijklmnopqrstuvwxyz0123456789"}é${"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"}"}`;
  const cases = [
    fossilCase("scoreboard: a few fields changed", json(doc), json(later)),
    fossilCase("identical", json(first), json(first)),
    fossilCase("empty base", new Uint8Array(0), json(first)),
    fossilCase("empty target", json(first), new Uint8Array(0)),
    fossilCase(
      "non-ASCII text changed",
      utf8.encode('{"city":"Zürich","temp":"−3 °C","note":"晴れ"}'),
      utf8.encode('{"city":"Zürich","temp":"−4 °C","note":"曇り"}'),
    ),
    fossilCase("UTF-8 texts whose delta is not UTF-8", utf8.encode(accented), utf8.encode(accented.replace("é", "è"))),
    fossilCase("binary bytes", binary, binaryEdited),
    fossilCase("large change: every player changed, reordered, team renamed", json(later), json(large)),
    fossilCase("delta not smaller than the target", randomBytes(64, rnd), randomBytes(64, rnd)),
  ];
  const scored = cases[0]!;
  const delta = bytesOf(scored.delta);
  const deltaText = Buffer.from(delta).toString("latin1");
  const base = scored.base;
  const broken: FossilBroken[] = [
    {
      name: "checksum does not match",
      base,
      why: "checksum",
      delta: asVector(
        Buffer.from(
          deltaText.replace(/[0-9A-Za-z_~]+;$/, (c) => `${c === "1;" ? "2" : "1"};`),
          "latin1",
        ),
      ),
    },
    { name: "truncated", base, why: "truncated", delta: asVector(delta.subarray(0, Math.floor(delta.length / 2))) },
    { name: "copy past the end of the base", base: { text: "short base" }, why: "copy", delta: { text: "A\n5@k,0;" } },
    { name: "no size line", base, why: "header", delta: { text: "" } },
    { name: "unknown operator", base: { text: "abc" }, why: "operator", delta: { text: "3\n3?0;" } },
    ...refusals(scored),
  ];
  return {
    about:
      "Fossil deltas (fossil-scm.org delta_format) shared by the SDKs' appliers and the server's encoder. cases: applying `delta` to `base` gives `target`; `smaller` says whether the delta is shorter than the target (when not, the server sends the full message). broken: a delta an applier must refuse (throw), never turn into wrong bytes; `why` names its one fault: truncated (cut short at each kind of place), checksum (every command applies, the checksum does not match: a damaged delta or one made against another base), copy (out of the base), insert (longer than the delta), size (the size line is not the output's size), header, operator, garbage (bytes that are no delta), empty. Bytes are {text} (UTF-8) or {base64}. Written by `npm run vectors:fossil` from the fossil-delta package; a unit test fails when this file is stale.",
    cases,
    broken,
  };
}

const latin1 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, "latin1"));
const DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~";

/** Fossil's checksum: the sum of the bytes as big-endian 32-bit words (the last one zero-padded), mod 2^32. */
export const fossilChecksum = (b: Uint8Array): number => b.reduce((s, x, i) => (s + (x << (24 - 8 * (i % 4)))) | 0, 0) >>> 0;

/** A number as a Fossil delta writes it: base 64 with the digits `0-9 A-Z _ a-z ~`, most significant first. */
export function fossilDigits(v: number): string {
  let s = "";
  do {
    s = DIGITS[v % 64]! + s;
    v = Math.floor(v / 64);
  } while (v > 0);
  return s;
}

/** A delta written by hand: a size line, commands, and the checksum of `result` (what its commands would make). */
const handMade = (size: number, commands: string, result: Uint8Array): Uint8Array =>
  latin1(`${fossilDigits(size)}\n${commands}${fossilDigits(fossilChecksum(result))};`);

/**
 * The deltas an applier must refuse beyond the first five: the scoreboard case's delta cut short at each kind of
 * place, with a checksum that does not match although every command applies, given a wrong size line or
 * another base, and deltas written by hand whose one fault is a copy out of the base, an insert longer than the
 * delta, or bytes that are no delta at all. Each is refused by the library (the test checks), so only one fault
 * is in each: an applier that skips that one check accepts it.
 */
function refusals(scored: FossilCase): FossilBroken[] {
  const [base, delta, target] = [bytesOf(scored.base), bytesOf(scored.delta), bytesOf(scored.target)];
  const text = Buffer.from(delta).toString("latin1");
  const b = scored.base;
  const cut = (name: string, at: number): FossilBroken => ({ name: `truncated: ${name}`, base: b, why: "truncated", delta: asVector(delta.subarray(0, at)) });
  const sumDigits = fossilDigits(fossilChecksum(target));
  if (!text.endsWith(`,${sumDigits};`)) throw new Error("the scoreboard delta does not end with a copy and its checksum");
  const newline = text.indexOf("\n");
  const firstCopy = text.indexOf("@");
  const firstInsert = text.indexOf(":");
  const withSize = (size: number): Uint8Array => latin1(`${fossilDigits(size)}${text.slice(newline)}`);
  const short = latin1("short base");
  const abc = latin1("abc");
  // The previous document of the channel with the team renamed: every copy is in range, the bytes are others.
  const otherBase = latin1(Buffer.from(base).toString("latin1").replace("Harbour City", "Harbour Town"));
  const garbage = Uint8Array.from({ length: 96 }, seededBytes(seeded(3_600)));
  // An insert whose count takes in the checksum command after its bytes: nothing is left to end the delta.
  const swallowed = `${fossilDigits(3)}:abc${fossilDigits(fossilChecksum(abc))};`;
  return [
    cut("inside the size line", 1),
    cut("after the size line, no command", newline + 1),
    cut("inside a copy command, before its ','", firstCopy + 2),
    cut("inside an insert's bytes", firstInsert + 2),
    cut("the checksum without its ';'", delta.length - 1),
    cut("no checksum command", delta.length - sumDigits.length - 1),
    {
      name: "checksum one more than the target's, every command applies",
      base: b,
      why: "checksum",
      delta: asVector(latin1(`${text.slice(0, -sumDigits.length - 1)}${fossilDigits((fossilChecksum(target) + 1) >>> 0)};`)),
    },
    { name: "made against another base of the same length", base: asVector(otherBase), why: "checksum", delta: scored.delta },
    { name: "copy ends one byte past the end of the base", base: { text: "short base" }, why: "copy", delta: asVector(handMade(5, "5@6,", short.subarray(5))) },
    { name: "copy larger than the base", base: { text: "abc" }, why: "copy", delta: asVector(handMade(4, "4@0,", abc)) },
    { name: "the scoreboard delta on its base cut short", base: asVector(base.subarray(0, base.length >> 1)), why: "copy", delta: scored.delta },
    { name: "insert longer than the whole delta", base: { text: "" }, why: "insert", delta: asVector(handMade(64, `${fossilDigits(64)}:abc`, abc)) },
    {
      name: "insert that swallows the checksum",
      base: { text: "" },
      why: "insert",
      delta: asVector(latin1(`${fossilDigits(swallowed.length)}\n${fossilDigits(swallowed.length)}:${swallowed}`)),
    },
    { name: "size line one more than the output", base: b, why: "size", delta: asVector(withSize(target.length + 1)) },
    { name: "size line one less than the output", base: b, why: "size", delta: asVector(withSize(target.length - 1)) },
    { name: "garbage bytes", base: b, why: "garbage", delta: asVector(garbage) },
    { name: "a JSON document instead of a delta", base: b, why: "garbage", delta: scored.target },
    { name: "empty delta on an empty base", base: { text: "" }, why: "empty", delta: { text: "" } },
    { name: "size line of an empty target, no checksum", base: { text: "" }, why: "empty", delta: { text: "0\n" } },
  ];
}

/** The file's text: one case per line group, stable key order. */
export const vectorsText = (v: FossilVectors): string => `${JSON.stringify(v, null, 2)}\n`;

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (!out) throw new Error("usage: node fossil-vectors.js <path of fossil.json>");
  writeFileSync(out, vectorsText(fossilVectors()));
  console.log(`wrote ${out}`);
}
