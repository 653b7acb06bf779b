// A stand-in client-under-test for the runner's reuse test. Appends its pid to the file named by `--log` when it
// starts. `--reset`: announces reset on its first line and answers `reset`; `--stale`: writes an event of the
// old scenario right behind its `reset` answer; `--hang`: never answers `reset`; `--slow-exit`: exits 1 s after
// answering `close`, answering what comes meanwhile (a JVM's shutdown takes that long). `connect` answers ok with a
// `connected` event, `mark` writes a `mark` event, `publish` fails; exits after `close`.
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

const flag = (f) => process.argv.includes(f);
appendFileSync(process.argv[process.argv.indexOf("--log") + 1], `${process.pid}\n`);
const line = (o) => `${JSON.stringify(o)}\n`;
const out = (o) => process.stdout.write(line(o));
if (flag("--reset")) out({ event: "adapter", reset: true });
createInterface({ input: process.stdin }).on("line", (text) => {
  const c = JSON.parse(text);
  if (c.cmd === "reset" && flag("--hang")) return;
  if (c.cmd === "reset" && flag("--stale")) return process.stdout.write(line({ id: c.id, ok: true, result: {} }) + line({ event: "mark", late: true }));
  if (c.cmd === "connect") out({ event: "connected", pid: process.pid });
  if (c.cmd === "mark") out({ event: "mark" });
  if (c.cmd === "publish") return out({ id: c.id, ok: false, error: { code: "forbidden", temporary: false } });
  out({ id: c.id, ok: true, result: {} });
  if (c.cmd === "close") setTimeout(() => process.exit(0), flag("--slow-exit") ? 1_000 : 0);
});
