// ESLint rule "local/layers": the folders of gateway/src import only downwards, in the order the docs give
// (docs/architecture.md, "Source layout"). Each folder has a rank; an import of a higher rank, or of another
// door (ws, sse, http: same rank, separate), is an error. Files at gateway/src's top level are ranked too,
// and a folder or top-level file the list does not name is an error of its own: it must be given a rank
// (here and in the docs), or the rule would let it import anything and be imported by anything.
import { dirname, relative, resolve, sep } from "node:path";

/** Lowest first. A folder may import its own rank (the doors excepted) and every rank below. */
export const LAYERS = [
  ["protocol", "config", "namespaces", "metrics", "util", "errors.ts", "log.ts", "net.ts", "uws.ts"],
  ["limits", "backend"],
  ["broker"],
  ["fanout", "services"],
  ["presence", "publish", "events"],
  ["auth", "rpc"],
  ["ws", "sse", "http"],
  ["control"],
  ["centrifugo"],
  ["instance", "cli.ts", "mod.ts"],
];
const DOORS = new Set(["ws", "sse", "http"]);
/**
 * Folders that reach the broker only through its contract (broker/*.ts: broker.ts, events.ts), never an
 * implementation under it (broker/jetstream/, …): the primary hands them one, so they run on any broker
 * that implements the contract, and in process against a fake of it.
 */
export const CONTRACT_ONLY = new Set(["events", "services"]);
const RANK = new Map(LAYERS.flatMap((names, i) => names.map((n) => [n, i])));
const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+["'](\.{1,2}\/[^"']+)["']/g;

/** The top-level folder (or file) of gateway/src a path is in, or undefined outside it. */
function unitOf(root, file) {
  const rel = relative(root, file);
  if (rel.startsWith("..")) return undefined;
  return rel.split(sep)[0];
}

/** Whether `file` is in a folder under broker/ (an implementation), not one of broker/'s own files (the contract). */
const brokerInternal = (root, file) => relative(root, file).split(sep).length > 2;

export default {
  meta: { type: "problem", docs: { description: "gateway/src folders import only lower layers" }, schema: [] },
  create(context) {
    const file = resolve(context.filename);
    const root = resolve(context.cwd ?? process.cwd(), "gateway/src");
    const from = unitOf(root, file);
    if (from === undefined) return {};
    const unranked = (unit) =>
      `gateway/src/${unit} is not in LAYERS (scripts/eslint/layers.js): give it a rank there and in docs/architecture.md's "Source layout"`;
    return {
      Program(node) {
        if (!RANK.has(from)) {
          context.report({ node, message: unranked(from) });
          return;
        }
        const text = context.sourceCode.getText();
        for (const m of text.matchAll(IMPORT)) {
          const target = resolve(dirname(file), m[1]).replace(/\.js$/, ".ts");
          const to = unitOf(root, target);
          if (to === undefined || to === from) continue;
          if (to === "broker" && CONTRACT_ONLY.has(from) && brokerInternal(root, target))
            context.report({
              node,
              message: `${from}/ must not import ${m[1]}: it reaches the broker through its contract (broker/broker.ts, broker/events.ts), not an implementation`,
            });
          if (!RANK.has(to)) {
            context.report({ node, message: `${from}/ imports ${m[1]}: ${unranked(to)}` });
            continue;
          }
          const up = RANK.get(to) > RANK.get(from);
          const across = DOORS.has(from) && DOORS.has(to);
          if (up || across)
            context.report({
              node,
              message: `${from}/ must not import ${to}/ (${m[1]}): ${across ? "doors do not import each other" : "imports go down the layers"} — ${LAYERS.map((l) => l.join(",")).join(" < ")}`,
            });
        }
      },
    };
  },
};
