// What every part of the evaluation gets: the servers of the current target, the options, a logger and the row
// collector; plus the nats CLI chores they share (streams made and removed, output awaited).
import type { Options } from "./options.js";
import type { Servers } from "./servers.js";
import type { Row } from "./rows.js";
import { runNats, type CliProc } from "./natscli.js";
import { waitFor } from "#testkit/wait.js";

export type Context = {
  servers: Servers;
  opts: Options;
  log(line: string): void;
  add(row: Row): void;
};

/** The node a pod's clients use: pods are spread over the cluster's nodes, the same way for every path. */
export const nodeFor = (ctx: Context, pod: number): string => ctx.servers.urls[pod % ctx.servers.urls.length]!;

/** The port of a nats://host:port URL. */
export const portOf = (url: string): number => Number(new URL(url.replace("nats://", "http://")).port);

export type StreamSpec = { name: string; subjects: string[]; storage: "file" | "memory"; replicas: number; dupeWindow?: string };

export function streamAddArgs(s: StreamSpec): string[] {
  return [
    "stream",
    "add",
    s.name,
    ...s.subjects.flatMap((x) => ["--subjects", x]),
    "--storage",
    s.storage,
    "--replicas",
    String(s.replicas),
    ...(s.dupeWindow ? ["--dupe-window", s.dupeWindow] : []),
    "--defaults",
  ];
}

/** Creates streams afresh (an earlier one of the same name is removed first). */
export async function freshStreams(ctx: Context, specs: readonly StreamSpec[]): Promise<string[]> {
  await removeStreams(
    ctx,
    specs.map((s) => s.name),
  );
  const cmds: string[] = [];
  for (const s of specs) {
    const args = streamAddArgs(s);
    await runNats(args, ctx.servers.servers);
    cmds.push(`nats ${args.join(" ")}`);
  }
  return cmds;
}

export async function removeStreams(ctx: Context, names: readonly string[]): Promise<void> {
  for (const n of names) {
    await runNats(["stream", "rm", n, "-f"], ctx.servers.servers).catch(() => undefined);
  }
}

/** Waits until a nats CLI process has printed `pattern` `count` times (its clients have started). */
export async function printed(p: CliProc, pattern: RegExp, count: number, timeoutMs: number): Promise<void> {
  const g = new RegExp(pattern.source, "g");
  await waitFor(
    () => {
      if (p.child.exitCode !== null) return true;
      return (p.output().match(g)?.length ?? 0) >= count || undefined;
    },
    { timeoutMs, what: `nats CLI output ${pattern}` },
  );
}

/** Keeps a started CLI process in `procs` (killed in a finally, whatever happened) and returns it. */
export function track(procs: CliProc[], p: CliProc): CliProc {
  procs.push(p);
  return p;
}

export const errText = (e: unknown): string => (e instanceof Error ? e.message : String(e)).split("\n")[0]!.slice(0, 300);
