// A stand-in client-under-test for the CLI's unit test: answers `connect` with a `connected` event and ok,
// `publish` with an error, `subscribe` with a line that is not JSON (a protocol violation), anything else
// with ok; exits after `close`.
import { createInterface } from "node:readline";

const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
createInterface({ input: process.stdin }).on("line", (line) => {
  const c = JSON.parse(line);
  if (c.cmd === "connect") out({ event: "connected", argv: process.argv.slice(2), cwd: process.cwd() });
  if (c.cmd === "subscribe") process.stdout.write("debug: subscribing\n");
  if (c.cmd === "publish") return out({ id: c.id, ok: false, error: { code: "forbidden", temporary: false } });
  out({ id: c.id, ok: true, result: {} });
  if (c.cmd === "close") setImmediate(() => process.exit(0));
});
