// MessagePack against Protobuf for the binary subprotocol (issue 36), on the frames the gateway sends most:
// bytes per frame, server CPU per `msg` frame encode, and what each library adds to the browser SDK bundle.
// JSON (fanout.v1, the gateway's own encoder from dist/) is the baseline. Prints a table and a last line of
// JSON. Run from the repository root after `npm run build`:
//   (cd loadtest/codecs && npm ci --ignore-scripts) && node loadtest/codecs/compare.mjs
import { randomBytes } from "node:crypto";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { Encoder } from "@msgpack/msgpack";
import { Packr } from "msgpackr";
import protobuf from "protobufjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const { msgFrame, jsonFrame, isJsonPayload } = await import(new URL("../../dist/gateway/src/protocol/serialize.js", import.meta.url).href);

const small = Buffer.from('{"sym":"ABC","price":12.5,"qty":100,"side":"buy"}');
const doc = Buffer.from(
  JSON.stringify({
    match: "m-8812",
    clock: "71:32",
    score: [2, 1],
    players: Array.from({ length: 21 }, (_, i) => ({
      id: i,
      name: `Player ${i}`,
      goals: i % 3,
      cards: i % 5 === 0 ? ["yellow"] : [],
      rating: 6.5 + (i % 7) / 2,
    })),
  }),
);
const bin = randomBytes(256);
const meta = { channel: "prices.ABC", pattern: "prices.*", seq: 1_234_567, ts: 1_764_114_000_123.456 };

// A binary frame carries the stored payload as bytes; `enc` names a payload that is not JSON. Deciding that
// is part of each encode, as it is of the JSON encoder's.
const msgValue = (payload) => ({
  op: "msg",
  channel: meta.channel,
  sub: meta.pattern,
  seq: meta.seq,
  ts: meta.ts,
  data: payload,
  ...(isJsonPayload(payload) ? {} : { enc: "binary" }),
});
const frames = {
  "msg, 50 B JSON payload": { json: () => msgFrame(meta, small), value: () => msgValue(small), pb: () => ({ msg: msgValue(small) }) },
  "msg, 2 KB JSON document": { json: () => msgFrame(meta, doc), value: () => msgValue(doc), pb: () => ({ msg: msgValue(doc) }) },
  "msg, 256 B binary payload": {
    json: () => msgFrame(meta, bin),
    value: () => msgValue(bin),
    pb: () => ({ msg: msgValue(bin) }),
  },
  "ok of a pub": {
    json: () => jsonFrame({ op: "ok", id: 17, fields: { seq: 1_234_567, duplicate: false } }),
    value: () => ({ op: "ok", id: 17, seq: 1_234_567, duplicate: false }),
    pb: () => ({ ok: { numId: 17, seq: 1_234_567, duplicate: false } }),
  },
  err: {
    json: () => jsonFrame({ op: "err", id: 3, code: "forbidden", message: "no right to subscribe to a.b", temporary: false }),
    value: () => ({ op: "err", id: 3, code: "forbidden", message: "no right to subscribe to a.b", temporary: false }),
    pb: () => ({ err: { numId: 3, code: "forbidden", message: "no right to subscribe to a.b", temporary: false } }),
  },
};

const root = protobuf.loadSync(`${here}frames.proto`);
const ServerFrame = root.lookupType("fanout.v1.ServerFrame");
const packr = new Packr({ useRecords: false });
const mp = new Encoder();
const encoders = {
  json: (f) => Buffer.from(f.json()),
  msgpackr: (f) => packr.pack(f.value()),
  "@msgpack/msgpack": (f) => mp.encode(f.value()),
  protobufjs: (f) => ServerFrame.encode(f.pb()).finish(),
};

// Round trip checks: each encoding carries the frame.
for (const f of Object.values(frames)) {
  const p = ServerFrame.decode(encoders.protobufjs(f));
  if (p.frame === undefined) throw new Error("protobuf frame lost");
  if (packr.unpack(encoders.msgpackr(f)).op !== f.value().op) throw new Error("msgpack frame lost");
}

/**
 * ns per encode of the `msg` frame with a 50 B payload (new metadata each time, as live messages have): the
 * encoders take turns, 9 rounds of 50,000 each, and each keeps its fastest round: on a shared machine the
 * slower rounds measure the neighbours.
 */
function nsPerEncode(encoders) {
  const best = Object.fromEntries(Object.keys(encoders).map((k) => [k, Infinity]));
  for (let r = 0; r < 9; r++) {
    for (const [name, encode] of Object.entries(encoders)) {
      const n = 50_000;
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) {
        meta.seq = 1_000_000 + i;
        encode();
      }
      best[name] = Math.min(best[name], Number(process.hrtime.bigint() - t0) / n);
    }
  }
  meta.seq = 1_234_567;
  return best;
}
const cpu = nsPerEncode({
  json: () => msgFrame(meta, small),
  msgpackr: () => packr.pack(msgValue(small)),
  "@msgpack/msgpack": () => mp.encode(msgValue(small)),
  protobufjs: () => ServerFrame.encode({ msg: msgValue(small) }).finish(),
});

/** What a browser bundle of the library's encode and decode takes, minified and gzipped (level 9). */
async function bundleBytes(contents) {
  const r = await build({
    stdin: { contents, resolveDir: here, loader: "js" },
    bundle: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    target: "es2022",
    minify: true,
    write: false,
    logLevel: "silent",
  });
  const js = r.outputFiles[0].contents;
  return { min: js.length, gz: gzipSync(js, { level: 9 }).length };
}
const schemaJson = JSON.stringify(root.toJSON());
const sdk = {
  json: { min: 0, gz: 0 },
  msgpackr: await bundleBytes(
    'import { Packr, Unpackr } from "msgpackr"; export const p = new Packr({ useRecords: false }), u = new Unpackr({ useRecords: false });',
  ),
  "@msgpack/msgpack": await bundleBytes('export { encode, decode } from "@msgpack/msgpack";'),
  protobufjs: await bundleBytes(`import protobuf from "protobufjs/light"; export const root = protobuf.Root.fromJSON(${schemaJson});`),
};
/** protobufjs's runtime without reflection: what static code generated per message type (not counted) builds on. */
const protobufMinimal = await bundleBytes('import protobuf from "protobufjs/minimal"; export const { Reader, Writer } = protobuf;');

const names = Object.keys(encoders);
const rows = Object.entries(frames).map(([name, f]) => [name, ...names.map((n) => encoders[n](f).length)]);
console.log(`| frame | ${names.join(" | ")} |`);
console.log(`|---|${names.map(() => "---:").join("|")}|`);
for (const r of rows) console.log(`| ${r.join(" | ")} |`);
console.log(`| server ns per msg encode (50 B) | ${names.map((n) => cpu[n].toFixed(0)).join(" | ")} |`);
console.log(`| SDK bundle bytes, min / gzip | ${names.map((n) => (n === "json" ? "0 (built in)" : `${sdk[n].min} / ${sdk[n].gz}`)).join(" | ")} |`);
console.log(`protobufjs/minimal alone (the floor under generated code): ${protobufMinimal.min} / ${protobufMinimal.gz} bytes`);
console.log(
  JSON.stringify({
    bytes: Object.fromEntries(rows.map((r) => [r[0], Object.fromEntries(names.map((n, i) => [n, r[i + 1]]))])),
    nsPerMsgEncode: cpu,
    sdkBundle: { ...sdk, "protobufjs/minimal": protobufMinimal },
  }),
);
