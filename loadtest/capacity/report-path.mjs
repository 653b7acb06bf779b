// Where a capacity run writes its report. The committed loadtest/results/capacity.md is a full run's: a
// --quick run (a smoke test of the tools, with a tenth of the load) must not overwrite it, so it writes into
// its own run folder (beside the raw Artillery and autocannon reports) unless --out says where.
import { join, resolve } from "node:path";

/**
 * @param {{ out?: string, quick: boolean }} args the run's flags
 * @param {{ resultsDir: string, runDir: string }} dirs the committed results folder and this run's temporary folder
 * @returns {string} the report's path
 */
export function reportPath(args, dirs) {
  if (args.out) return resolve(args.out);
  return args.quick ? join(dirs.runDir, "capacity.md") : join(dirs.resultsDir, "capacity.md");
}
