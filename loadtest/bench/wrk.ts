// wrk (C, from apt) as the HTTP load generator of the benchmarks: on a 2-core machine the load generator
// shares the CPU with the server it measures, and wrk costs it far less per request than a Node client.
import { execFile, execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { resolve } from "node:path";

/** The HTTP legs' load generator: wrk when installed (it costs the shared CPU least), else autocannon. */
export type HttpClient = "wrk" | "autocannon";

/** `clientCpuS`: the CPU seconds wrk itself used. */
export type WrkResult = { msgsPerSec: number; p50Ms: number; p99Ms: number; seconds: number; clientCpuS?: number };

export function hasWrk(): boolean {
  try {
    execFileSync("wrk", ["--version"], { stdio: "ignore" });
    return true;
  } catch (e) {
    // wrk --version exits 1 after printing its version; only a missing binary is ENOENT.
    return (e as NodeJS.ErrnoException).code !== "ENOENT";
  }
}

/**
 * wrk, one thread, `connections` keep-alive connections, each one request at a time. Run under bash, whose
 * /proc stat then holds wrk's CPU (cutime, cstime) once it has waited for it.
 */
export async function wrk(url: string, body: string, connections: number, seconds: number, perRequest: number, name: string): Promise<WrkResult> {
  const script = resolve(tmpdir(), `fgw-bench-publish-${process.pid}.lua`);
  // A long bracket string: Lua reads it as it is (no escapes to get wrong in the JSON).
  writeFileSync(script, `wrk.method = "POST"\nwrk.headers["content-type"] = "application/json"\nwrk.body = [==[${body}]==]\n`);
  const args = ["-t1", `-c${connections}`, `-d${seconds}s`, "--timeout", "10s", "--latency", "-s", script, url];
  const out = await new Promise<string>((res, rej) =>
    execFile("bash", ["-c", 'wrk "$@" || exit $?; echo "stat: $(cat /proc/$$/stat)"', "bash", ...args], { timeout: (seconds + 30) * 1000 }, (e, so) =>
      e ? rej(e) : res(so),
    ),
  );
  return parseWrk(out, perRequest, name);
}

/** wrk's report: requests and duration, non-2xx answers, the latency distribution, and its CPU (bash's cutime). */
export function parseWrk(out: string, perRequest: number, name = "wrk"): WrkResult {
  const dur = (v: string, unit: string) => Number(v) * ({ us: 1e-3, ms: 1, s: 1e3, m: 60e3 } as Record<string, number>)[unit]!;
  const done = /(\d+) requests in ([\d.]+)(us|ms|s|m),/.exec(out);
  if (!done) throw new Error(`${name}: no result in wrk's output:\n${out}`);
  const seconds = dur(done[2]!, done[3]!) / 1000;
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const errors = /Socket errors: (.*)/.exec(out)?.[1];
  if (non2xx > 0 || errors) console.log(`  (${name}: ${non2xx} non-2xx answers${errors ? `, socket errors: ${errors}` : ""})`);
  const pct = (p: number) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s|m)`, "m").exec(out);
    return m ? dur(m[1]!, m[2]!) : NaN;
  };
  const stat = /^stat: .*\) (.*)$/m.exec(out)?.[1]?.split(" ");
  const clientCpuS = stat ? (Number(stat[13]) + Number(stat[14])) / 100 : undefined;
  return { msgsPerSec: ((Number(done[1]) - non2xx) * perRequest) / seconds, p50Ms: pct(50), p99Ms: pct(99), seconds, clientCpuS };
}
