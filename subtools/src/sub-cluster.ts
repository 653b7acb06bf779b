// sub-cluster: many subscribers over several processes, measuring end-to-end latency, loss, duplicates
// and order. `sub-cluster merge a.json b.json …` combines results from several hosts exactly.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { parseSubOptions, SUB_USAGE, UsageError } from "./options.js";
import { runMaster } from "./master.js";
import { ClockMixError, isSubResult, mergeResults } from "./result.js";
import { TAG, reportLines } from "./report.js";

function merge(args: string[]): number {
  const accept = args.includes("--accept-unknown-offsets");
  const files = args.filter((a) => a !== "--accept-unknown-offsets");
  if (files.length === 0) throw new UsageError("merge needs at least one result file");
  const results = files.map((f) => {
    const v: unknown = JSON.parse(readFileSync(f, "utf8"));
    if (!isSubResult(v)) throw new UsageError(`${f} is not a sub-cluster --json result`);
    return v;
  });
  let merged;
  try {
    merged = mergeResults(
      results,
      files.map((f) => basename(f)),
      accept,
    );
  } catch (e) {
    if (e instanceof ClockMixError) {
      console.error(`sub-cluster merge: ${e.message}`);
      return 65;
    }
    throw e;
  }
  console.log(`${TAG}merged ${files.length} results: ${files.join(" ")}`);
  for (const l of reportLines(merged)) console.log(l);
  return 0;
}

async function main(argv: string[]): Promise<number> {
  if (argv[0] === "merge") return merge(argv.slice(1));
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(SUB_USAGE);
    return 0;
  }
  const opts = parseSubOptions(argv);
  const r = await runMaster(opts);
  return r.counts.everConnected === 0 ? 2 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof UsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      console.error(`sub-cluster: ${(err as Error).message}\n${SUB_USAGE}`);
      process.exit(64);
    }
    console.error(err);
    process.exit(1);
  },
);
