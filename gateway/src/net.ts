import { spawn, type ChildProcess } from "node:child_process";
import { connect, createServer } from "node:net";

/** A TCP port that was free on `host` a moment ago (for children that need a fixed port). */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, host, () => {
      const a = srv.address();
      const port = typeof a === "object" && a ? a.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** One Redis PING over a raw socket on loopback: true on +PONG. */
export function redisPing(port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    let buf = "";
    const done = (ok: boolean): void => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once("error", () => done(false));
    s.on("data", (d) => {
      buf += d.toString();
      if (buf.includes("\r\n")) done(buf.startsWith("+PONG"));
    });
    s.write("PING\r\n");
  });
}

/** Stops a child process: SIGTERM, then SIGKILL after `timeoutMs`; resolves once it has exited. */
export async function stopChild(child: ChildProcess | undefined, timeoutMs: number): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill("SIGTERM");
  const t = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  await exited;
  clearTimeout(t);
}

/**
 * Ties a child server's life to this process's: a small `sh` reads a pipe from us and, at end of file —
 * which the kernel delivers however we die, SIGKILL included — sends the server SIGTERM. The lifeline goes
 * away with the server, so a deliberate stop (or a crash and restart) needs nothing more.
 */
export function tieToThisProcess(server: ChildProcess): void {
  // In a process group of its own, like the server: a Ctrl-C to the gateway's group must not end the lifeline.
  const l = spawn("/bin/sh", ["-c", 'read _ || kill -TERM "$1" 2>/dev/null', "fanout-gateway-lifeline", String(server.pid)], {
    stdio: ["pipe", "ignore", "ignore"],
    detached: true,
  });
  l.on("error", () => undefined); // without /bin/sh the server just is not tied; nothing else changes
  l.unref();
  server.once("exit", () => l.kill("SIGKILL"));
}
