// Every bench `npm run bench -- <name>` knows: what it measures (one line, shown by --list and --help), the
// script it runs (built, under dist/), and a set-up step when it needs one. `kit: true` marks the benches on
// the kit's flags (loadtest/kit/flags.ts); the others keep their own command lines.

export type Entry = {
  readonly summary: string;
  /** The script, relative to the repository (built JavaScript). */
  readonly script: string;
  /** Run before the script (once per invocation), e.g. fetching a tool. */
  readonly setup?: readonly string[];
  readonly kit: boolean;
};

const bench = (file: string, summary: string, setup?: readonly string[]): Entry => ({
  summary,
  script: `dist/loadtest/bench/${file}.js`,
  ...(setup ? { setup } : {}),
  kit: true,
});

export const BENCHES = {
  ab: bench("ab", "two builds side by side in the same rounds (this checkout against --rev), replay or publish workload"),
  channels: bench("channels", "many channels with one socket each: subscribe acks, idle CPU and delivery, JetStream against Redis"),
  deltas: bench("deltas", "per-channel Fossil deltas in process: wire bytes of a 2 KB state channel against plain JSON, create and apply CPU"),
  wire: bench("wire", "bytes on the wire per message over real sockets: a 2 KB state channel, JSON and MessagePack, with and without deltas"),
  connections: bench("connections", "100,000 sockets on one channel: memory per socket and delivery to all"),
  million: bench(
    "million",
    "a million idle WebSockets on this machine: connect time, memory per connection (gateway and kernel), one message to all, a steady rate",
  ),
  fanout: bench("fanout", "fan-out to N clients at M msg/s through the gateway against bare uWebSockets.js"),
  jetstream: bench("jetstream/main", "JetStream evaluation: nats bench rows, the Node client and the gateway's legs, on a server and a 3-node cluster", [
    "bash",
    "scripts/setup-bench-tools.sh",
  ]),
  "metrics-flood": bench("metrics-flood", "delivery while /metrics is flooded, on the public port and on an admin port"),
  presence: bench("presence", "joins, refreshes and leaves of 10,000 presence members, with watchers"),
  publish: bench("publish", "publishing over HTTP and WebSocket against nats bench and a bare HTTP server"),
  regions: bench(
    "regions/main",
    "three regions with delayed links (tc netem or proxies): publish in a → delivery in b, mirror lag, a 10,000-message resume moved from a to b",
  ),
  replay: bench("replay", "replay rate to one socket against a raw ordered-consumer read of the same stream"),
  sse: bench("sse", "fan-out over Server-Sent Events next to WebSockets: time, deliveries/s, worker CPU"),
  storm: bench("storm", "reconnect storms: thousands of sockets resuming at once from history"),
  tools: bench("tools", "the load tools' own cost: native, lean and ws engines against the gateway"),
  webhook: bench("webhook", "the events webhook through one endpoint: events/s and the gateway's CPU per event, ordered and with more batches in flight"),
  compare: {
    summary: "the users' Redis pub/sub workload (800 and 8,000 clients) through the gateway on JetStream and on Redis",
    script: "dist/loadtest/compare/compare.js",
    kit: true,
  },
  peers: {
    summary: "the same clients and publisher against this gateway, Socket.IO, centrifuge and bare uWebSockets.js",
    script: "dist/loadtest/compare/peers.js",
    setup: ["bash", "loadtest/peers/setup.sh"],
    kit: true,
  },
  centrifugo: {
    summary:
      "the Centrifuge SDK scenarios (Go, Python, JavaScript) against this gateway and a real Centrifugo v6 side by side: outcome per scenario, SDK and server",
    script: "dist/loadtest/compare/centrifugo.js",
    setup: ["bash", "scripts/setup-centrifugo.sh"],
    kit: true,
  },
  chaos: {
    summary:
      "faults on a 3-node NATS cluster (or, with --regions, three regions) and three gateway instances under load; the checker finds any loss, duplicate or reorder",
    script: "dist/loadtest/chaos/main.js",
    kit: true,
  },
  soak: {
    summary: "an hour of steady churn against one gateway: every sampled series must stay flat and every table in its bound",
    script: "dist/loadtest/soak/main.js",
    kit: true,
  },
  "sync-interval": {
    summary: "what JetStream's sync_interval: always costs on a 3-node cluster (own flags: --msgs --size --window --repeat --single --json)",
    script: "deploy/bench/sync-interval.mjs",
    kit: false,
  },
} as const satisfies Record<string, Entry>;

export type BenchName = keyof typeof BENCHES;

export const isBench = (name: string): name is BenchName => Object.hasOwn(BENCHES, name);

/** The --list text: one line per bench. */
export function listing(): string {
  const names = Object.keys(BENCHES) as BenchName[];
  const w = Math.max(...names.map((n) => n.length)) + 2;
  return `${names.map((n) => n.padEnd(w) + BENCHES[n].summary).join("\n")}\n\nnpm run bench -- <name> --help lists a bench's flags.\n`;
}
