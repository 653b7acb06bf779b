// The side-by-side report of `npm run compare:centrifugo` (centrifugo.ts): one row per scenario and SDK with
// each server's outcome and the difference. Pure: a unit test renders it from made-up outcomes.

/** One scenario played by one SDK runner against one server. */
export type Outcome = {
  scenario: string;
  sdk: string;
  server: "gateway" | "centrifugo";
  ok: boolean;
  ms: number;
  /** Why it failed: the runner's first line (the step and what it waited for). */
  why?: string;
  /** The subscription and connection events the client saw, for a failed run (what the server did instead). */
  seen?: string[];
};

export type SideBySideMeta = {
  command: string;
  date: string;
  gateway: string;
  centrifugo: string;
  load: string;
  seconds: number;
  /** How each fault was played on Centrifugo. */
  faults: Readonly<Record<string, string>>;
  /** Per scenario, why the servers differ there (docs/centrifugo.md "What differs"); printed where they do. */
  explained: Readonly<Record<string, string>>;
};

export type Difference = "same" | "both fail" | "only the gateway passes" | "only Centrifugo passes";

export function differenceOf(gateway: Outcome | undefined, centrifugo: Outcome | undefined): Difference {
  if (gateway?.ok === centrifugo?.ok) return gateway?.ok ? "same" : "both fail";
  return gateway?.ok ? "only the gateway passes" : "only Centrifugo passes";
}

const cell = (s: string): string => s.replace(/\|/g, "\\|").replace(/\s+/g, " ").trim();

function shown(o: Outcome | undefined): string {
  if (!o) return "not run";
  if (o.ok) return `pass (${(o.ms / 1000).toFixed(1)} s)`;
  const seen = o.seen?.length ? ` Seen: ${o.seen.map((e) => `\`${e}\``).join(", ")}` : "";
  return cell(`fail: ${o.why ?? "?"}.${seen}`);
}

/** The Markdown report: what ran, how the faults were mapped, the table, and the differences explained. */
export function renderSideBySide(outcomes: readonly Outcome[], meta: SideBySideMeta): string {
  const keys = [...new Set(outcomes.map((o) => `${o.scenario}\u0000${o.sdk}`))];
  const find = (scenario: string, sdk: string, server: Outcome["server"]) =>
    outcomes.find((o) => o.scenario === scenario && o.sdk === sdk && o.server === server);
  const rows = keys.map((k) => {
    const [scenario, sdk] = k.split("\u0000") as [string, string];
    const g = find(scenario, sdk, "gateway");
    const c = find(scenario, sdk, "centrifugo");
    return { scenario, sdk, g, c, diff: differenceOf(g, c) };
  });
  const differing = [...new Set(rows.filter((r) => r.diff !== "same").map((r) => r.scenario))];
  const count = (d: Difference) => rows.filter((r) => r.diff === d).length;
  const lines = [
    "# The Centrifuge SDK scenarios against this gateway and a real Centrifugo v6",
    "",
    `\`${meta.command}\`, ${meta.date}, ${meta.seconds.toFixed(0)} s in all, load average ${meta.load} (two cores shared with other work).`,
    "",
    `- gateway: ${meta.gateway}`,
    `- Centrifugo: ${meta.centrifugo}`,
    "",
    "The scenario set of [gateway/conformance/centrifuge/scenarios.json](../../gateway/conformance/centrifuge/scenarios.json), each SDK's runner unchanged, against each server.",
    "What is the gateway's own is played on Centrifugo as follows; the TCP proxy's faults (`refuse`, `accept`, `cut`) are the same on both:",
    "",
    ...Object.entries(meta.faults).map(([f, how]) => `- **${f}**: ${how}`),
    "",
    `${rows.length} rows: ${count("same")} the same, ${count("only the gateway passes")} only the gateway passes, ${count("only Centrifugo passes")} only Centrifugo passes, ${count("both fail")} both fail.`,
    "",
    "| scenario | SDK | gateway | Centrifugo | difference |",
    "| --- | --- | --- | --- | --- |",
    ...rows.map((r) => `| ${r.scenario} | ${r.sdk} | ${shown(r.g)} | ${shown(r.c)} | ${r.diff} |`),
  ];
  if (differing.length > 0) {
    lines.push("", "## Where they differ", "");
    for (const s of differing) lines.push(`- **${s}**: ${meta.explained[s] ?? "not explained yet: a difference to remove or document"}`);
  }
  return `${lines.join("\n")}\n`;
}
