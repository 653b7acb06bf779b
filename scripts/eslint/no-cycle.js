// ESLint rule "local/no-cycle": a module of the project must not import itself back through a chain of
// relative imports (type-only imports included: they still tie the folders together). The import graph of
// the linted TypeScript is read once per run from the files' own import statements (`./x.js` is `./x.ts`).
import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+["'](\.{1,2}\/[^"']+)["']/g;
const graph = new Map();

function edges(file) {
  let out = graph.get(file);
  if (out) return out;
  out = [];
  graph.set(file, out);
  let text = "";
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return out;
  }
  for (const m of text.matchAll(IMPORT)) {
    const target = resolve(dirname(file), m[1].replace(/\.js$/, ".ts"));
    if (existsSync(target)) out.push(target);
  }
  return out;
}

/** A path from `start` back to itself, or undefined (depth-first, each module visited once). */
function cycleFrom(start) {
  const seen = new Set();
  const stack = [[start, [start]]];
  while (stack.length > 0) {
    const [file, path] = stack.pop();
    for (const next of edges(file)) {
      if (next === start) return [...path, start];
      if (seen.has(next)) continue;
      seen.add(next);
      stack.push([next, [...path, next]]);
    }
  }
  return undefined;
}

export default {
  meta: { type: "problem", docs: { description: "no import cycles between the project's modules" }, schema: [] },
  create(context) {
    return {
      Program(node) {
        const cycle = cycleFrom(resolve(context.filename));
        if (!cycle) return;
        const root = resolve(context.cwd);
        context.report({ node, message: `import cycle: ${cycle.map((f) => f.slice(root.length + 1)).join(" -> ")}` });
      },
    };
  },
};
