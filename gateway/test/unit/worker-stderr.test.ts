import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { forwardWorkerStderr, UWS_CORK_WARNING } from "../../src/instance/worker-stderr.js";

/** Feeds `chunks` through the forwarder and resolves with what came out. */
async function forwarded(chunks: string[]): Promise<string> {
  const from = new PassThrough();
  const to = new PassThrough();
  let out = "";
  to.on("data", (d: Buffer) => (out += d.toString()));
  forwardWorkerStderr(from, to);
  for (const c of chunks) from.write(c);
  from.end();
  await new Promise((r) => from.once("end", r));
  return out;
}

describe("worker stderr — the primary forwards it without uWS.js's cork warning", () => {
  it("drops the warning line, also when it arrives in pieces, and keeps every other line in order", async () => {
    const warning = `${UWS_CORK_WARNING} See documentation for uWS.HttpResponse.cork and consult the user manual.\n`;
    const out = await forwarded([
      "first line\n",
      warning.slice(0, 20),
      warning.slice(20) + "Error: boom\n    at x (y.js:1:1)\n",
      warning,
      "tail without newline",
    ]);
    expect(out).toBe("first line\nError: boom\n    at x (y.js:1:1)\ntail without newline");
  });

  it("keeps a line that only mentions the warning further in", async () => {
    const line = `worker said: ${UWS_CORK_WARNING}\n`;
    expect(await forwarded([line])).toBe(line);
  });
});
