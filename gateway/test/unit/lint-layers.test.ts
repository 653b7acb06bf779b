import { resolve } from "node:path";
import { Linter } from "eslint";
import { describe, expect, it } from "vitest";
// @ts-expect-error -- an ESLint rule in plain JavaScript (scripts/eslint/), without type declarations
import layers from "../../../scripts/eslint/layers.js";

const cwd = resolve(import.meta.dirname, "../../..");
const linter = new Linter({ cwd });
const config = [{ files: ["**/*.ts", "**/*.js"], plugins: { local: { rules: { layers } } }, rules: { "local/layers": "error" as const } }];
/** The messages of the layers rule for a file at `path` (relative to gateway/src) holding `code`. */
const lint = (path: string, code: string): string[] => linter.verify(code, config, resolve(cwd, "gateway/src", path)).map((m) => m.message);

describe("lint — layers rule", () => {
  it("lint — an import down the layers passes; one up, or across doors, fails", () => {
    expect(lint("ws/session.js", 'import { x } from "../fanout/hub.js";\nimport { y } from "./local.js";\n')).toEqual([]);
    expect(lint("fanout/hub.js", 'import { x } from "../ws/session.js";\n')).toEqual([expect.stringMatching(/imports go down the layers/)]);
    expect(lint("sse/endpoint.js", 'import { x } from "../ws/session.js";\n')).toEqual([expect.stringMatching(/doors do not import each other/)]);
  });

  it("lint — events/ and services/ reach the broker through its contract: broker/*.ts passes, broker/jetstream/ fails", () => {
    expect(lint("events/start.js", 'import { EventsBroker } from "../broker/events.js";\nimport { LeaseStore } from "../broker/broker.js";\n')).toEqual([]);
    expect(lint("events/shared-keys.js", 'import { encodeToken } from "../broker/jetstream/presence-keys.js";\n')).toEqual([
      expect.stringMatching(/events\/ must not import \.\.\/broker\/jetstream\/presence-keys\.js: it reaches the broker through its contract/),
    ]);
    expect(lint("services/leader-lease.js", 'import { LeaseStore } from "../broker/jetstream/webhook-lease.js";\n')).toEqual([
      expect.stringMatching(/services\/ must not import/),
    ]);
    // Other layers above the broker may still use an implementation (the primary composes one).
    expect(lint("instance/primary.js", 'import { x } from "../broker/jetstream/events-broker.js";\n')).toEqual([]);
  });

  it("lint — a folder the layers do not list fails, in it and in an import of it", () => {
    expect(lint("newthing/a.js", 'import { x } from "../util/distance.js";\n')).toEqual([expect.stringMatching(/gateway\/src\/newthing is not in LAYERS/)]);
    expect(lint("ws/session.js", 'import { x } from "../newthing/a.js";\n')).toEqual([
      expect.stringMatching(/ws\/ imports \.\.\/newthing\/a\.js: gateway\/src\/newthing is not in LAYERS/),
    ]);
    expect(lint("stray.js", "export const x = 1;\n")).toEqual([expect.stringMatching(/gateway\/src\/stray\.js is not in LAYERS/)]);
  });
});
