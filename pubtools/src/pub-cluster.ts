// pub-cluster: timed publishing from several processes to the gateway, JetStream, NATS or Redis,
// with publish-ack latency and an end marker per publisher and channel.
import { parsePubOptions, PubUsageError, PUB_USAGE } from "./options.js";
import { runPubMaster } from "./master.js";

async function main(argv: string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(PUB_USAGE);
    return 0;
  }
  const r = await runPubMaster(parsePubOptions(argv));
  return r.counts.failed > 0 || r.exitedAbnormally > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    if (err instanceof PubUsageError || (err as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      console.error(`pub-cluster: ${(err as Error).message}\n${PUB_USAGE}`);
      process.exit(64);
    }
    console.error(err);
    process.exit(1);
  },
);
