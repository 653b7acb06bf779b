#!/usr/bin/env node
// The long fuzz run: a million generated inputs (by default) through the frame parser, the channel validator,
// the permission matcher and the Centrifuge door's decoders (JSON lines and Protobuf, with lengths that lie:
// scripts/fuzz/centrifuge.mjs), from the built modules in dist/; then the doors target: random tokens,
// permissions and hook answers at every door of a real gateway (nats-server, hook backend), where no door may
// answer more than the WebSocket sub or pub would, and random API keys (by scope) at the control plane, publish
// and history, where each door answers as the key's scopes say; and `rpc` frames on open sockets, answered as
// their claims and the backend say. Usage: npm run fuzz [-- --runs N --doors N --seed S]
// The test suite runs the same properties 2,000 times each, and 60 door cases (gateway/test/fuzz/).
import fc from "fast-check";
import { parseArgs } from "node:util";
import { channelish, frameArbitraries, smallChannel, smallPattern } from "./fuzz/arbitraries.mjs";
import { centrifugeTargets } from "./fuzz/centrifuge.mjs";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "1000000" }, doors: { type: "string", default: "1000" }, seed: { type: "string" } },
});
const runs = Number(values.runs);
const doorRuns = Number(values.doors);
const seed = values.seed !== undefined ? Number(values.seed) : Date.now() % 2 ** 31;
const dist = new URL("../dist/gateway/src/", import.meta.url);
const { CLIENT_OPS, parseClientFrame } = await import(new URL("protocol/frames.js", dist));
// The frame generators cover exactly the parser's ops (a new op without a generator stops the run here).
const { anyFrameText, validFrame } = frameArbitraries(CLIENT_OPS);
const { checkChannel, checkPattern, matches } = await import(new URL("protocol/channel.js", dist));
const { ErrorCode } = await import(new URL("protocol/codes.js", dist));
const { patternCovers } = await import(new URL("auth/permissions.js", dist));
const CODES = new Set(Object.values(ErrorCode));
const centrifuge = {
  ...(await import(new URL("protocol/centrifuge/json.js", dist))),
  ...(await import(new URL("protocol/centrifuge/protobuf.js", dist))),
  ...(await import(new URL("protocol/centrifuge/proto-wire.js", dist))),
  ...(await import(new URL("centrifugo/client/commands.js", dist))),
  ErrorCode,
};

function assert(cond, what) {
  if (!cond) throw new Error(what);
}

const targets = [
  [
    "frame parser: never throws, typed result, valid frames round-trip",
    0.5,
    fc.oneof(
      anyFrameText,
      validFrame.map((f) => ({ f })),
    ),
    (x) => {
      if (typeof x === "object") {
        const r = parseClientFrame(JSON.stringify(x.f));
        assert(
          r.ok && JSON.stringify(r.frame) === JSON.stringify(parseClientFrame(JSON.stringify(r.frame)).frame),
          `valid frame did not round-trip: ${JSON.stringify(x.f)}`,
        );
        return;
      }
      const r = parseClientFrame(x);
      assert(r.ok ? typeof r.frame.op === "string" : CODES.has(r.code) && typeof r.message === "string", `bad result for ${JSON.stringify(x)}`);
    },
  ],
  [
    "channel validator: never throws, checkChannel ⇒ checkPattern, accepted names obey the rules",
    0.15,
    fc.oneof(channelish, fc.anything({ maxDepth: 1 })),
    (x) => {
      const c = checkChannel(x);
      const p = checkPattern(x);
      assert(!c.ok || p.ok, `channel but not pattern: ${JSON.stringify(x)}`);
      if (p.ok)
        assert(
          typeof x === "string" &&
            x.length <= 255 &&
            !x.startsWith("$") &&
            x
              .split(".")
              .every(
                (t) => t.length > 0 && !/[\s\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/.test(t),
              ),
          `accepted bad name ${JSON.stringify(x)}`,
        );
    },
  ],
  [
    "permission matcher: covers(perm, q) ⇒ matches(q, c) ⇒ matches(perm, c); channel as pattern",
    0.15,
    fc.tuple(smallPattern, smallPattern, smallChannel),
    ([perm, q, c]) => {
      assert(!(patternCovers(perm, q) && matches(q, c)) || matches(perm, c), `${perm} covers ${q} but not ${c}`);
      assert(patternCovers(perm, c) === matches(perm, c), `${perm} vs channel ${c}`);
    },
  ],
  ...centrifugeTargets(centrifuge, assert),
];

console.log(`fuzz: ${runs} inputs, seed ${seed}`);
let total = 0;
const t0 = performance.now();
for (const [name, share, arb, check] of targets) {
  const n = Math.round(runs * share);
  const t = performance.now();
  fc.assert(
    fc.property(arb, (x) => check(x)),
    { numRuns: n, seed, endOnFailure: true },
  );
  const s = (performance.now() - t) / 1000;
  total += n;
  console.log(`  ${name}: ${n} inputs in ${s.toFixed(1)} s (${Math.round(n / s)}/s)`);
}
const s = (performance.now() - t0) / 1000;
console.log(`fuzz: ${total} inputs in ${s.toFixed(1)} s (${Math.round(total / s)}/s), no failure`);
if (doorRuns > 0) await fuzzDoors(doorRuns);

/** The doors target against a real gateway with JWT authentication and both hooks. */
async function fuzzDoors(n) {
  const { doorCase, keyCase, rpcDoorCase, runDoorCase, runKeyCase, startDoorFuzzTarget } = await import("#testkit/door-fuzz.js");
  const target = await startDoorFuzzTarget("fuzz-doors-secret-that-is-long-enough-0123");
  try {
    const t = performance.now();
    await fc.assert(
      fc.asyncProperty(doorCase, (c) => runDoorCase(target, c).then(() => undefined)),
      { numRuns: n, seed, endOnFailure: true },
    );
    const sec = (performance.now() - t) / 1000;
    console.log(`  doors: ${n} cases at every door of a real gateway in ${sec.toFixed(1)} s, none answered more than the WebSocket`);
    const r = performance.now();
    await fc.assert(
      fc.asyncProperty(rpcDoorCase, (c) => runDoorCase(target, c).then(() => undefined)),
      { numRuns: n, seed, endOnFailure: true },
    );
    console.log(`  rpc: ${n} cases on an open WebSocket in ${((performance.now() - r) / 1000).toFixed(1)} s, each rpc answered as its claims and backend say`);
    const k = performance.now();
    await fc.assert(
      fc.asyncProperty(keyCase, (c) => runKeyCase(target, c).then(() => undefined)),
      { numRuns: n, seed, endOnFailure: true },
    );
    console.log(
      `  keys: ${n} API-key cases at the control plane, publish and history in ${((performance.now() - k) / 1000).toFixed(1)} s, each door as its scopes say`,
    );
  } finally {
    await target.stop();
  }
}
