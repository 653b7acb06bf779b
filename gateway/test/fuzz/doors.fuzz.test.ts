// The doors fuzz target, a short run: random tokens, permissions and hook answers at every door of a real
// gateway; no door answers more than the WebSocket sub (reads) or pub (writes) would. `npm run fuzz -- --doors N`
// runs it longer.
import fc from "fast-check";
import { afterAll, beforeAll, describe, it } from "vitest";
import { doorCase, keyCase, runDoorCase, runKeyCase, startDoorFuzzTarget } from "../support/door-fuzz.js";
import { SECRET } from "../auth/support.js";

let target: Awaited<ReturnType<typeof startDoorFuzzTarget>>;

beforeAll(async () => {
  target = await startDoorFuzzTarget(SECRET);
});
afterAll(async () => {
  await target?.stop();
});

describe("fuzz — doors", () => {
  it("no door answers more than the WebSocket sub or pub of the same credentials and hook answers", async () => {
    await fc.assert(
      fc.asyncProperty(doorCase, (c) => runDoorCase(target, c).then(() => undefined)),
      { numRuns: 60, endOnFailure: true },
    );
  });

  it("an API key reaches exactly the doors of its scopes; the control plane takes only an admin key's JSON, never a page's", async () => {
    await fc.assert(
      fc.asyncProperty(keyCase, (k) => runKeyCase(target, k).then(() => undefined)),
      { numRuns: 60, endOnFailure: true },
    );
  });
});
