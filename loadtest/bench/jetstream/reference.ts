// The users' own figures, quoted from their notes in ../shared/seeds/ (000–003), keyed by the workload they
// belong to. Each says where it comes from. They were measured on other hardware: the report compares them
// with ours only as ratios between configurations.

export type Reference = {
  /** The users' configuration, shortly. */
  config: string;
  /** The figure the users reported, as they reported it. */
  text: string;
  /** A number to compute their ratios from (msgs/s unless said otherwise). */
  value?: number;
  /** For a figure given as "sub ~340" beside the publisher's. */
  sub?: number;
  source: string;
};

const S000 = "seed 000 (design notes, Gardener cluster: 3 nodes × 4 CPU, each nats-server 1 CPU / 2 Gi)";
const S001 = "seed 001 (Kyma on three clouds, nats-server 2.9.0, 2–6 nodes × 2 CPU)";
const S002 = "seed 002 (local 3-node cluster on an Apple M1 Pro, 10 cores)";
const S003 = "seed 003 (.NET client V1 vs V2 against `nats-server --js`, 4-core Linux AMD64)";

/** Where the users measured, one line per seed note. */
export const SOURCES: readonly string[] = [S000, S001, S002, S003];

/** Users' figures by workload id. */
export const REFERENCE: Readonly<Record<string, Reference>> = {
  // Seed 000: "Avg pub msg/sec" is the mean of the per-publisher averages over the pods, "Avg sub" likewise.
  "000.one-10k-r3-sync-3": {
    config: "one stream · 10 KB · R3 file · sync · 3 pods",
    text: "avg pub 177, sub ~340 msgs/s",
    value: 177,
    sub: 340,
    source: `${S000}, "Publish to the same stream", 3 pods`,
  },
  "000.app-10k-r3-sync-3": {
    config: "stream per app · 10 KB · R3 file · sync · 3 pods",
    text: "avg pub 210, sub ~360 msgs/s",
    value: 210,
    sub: 360,
    source: `${S000}, "one stream per app.*.*.*", 3 pods`,
  },
  "000.one-10k-r3-sync-6": {
    config: "one stream · 10 KB · R3 file · sync · 6 pods",
    text: "avg pub 97, sub ~175 msgs/s",
    value: 97,
    sub: 175,
    source: `${S000}, "Publish to the same stream", 6 pods`,
  },
  "000.app-10k-r3-sync-6": {
    config: "stream per app · 10 KB · R3 file · sync · 6 pods",
    text: "avg pub 173, sub ~350 msgs/s",
    value: 173,
    sub: 350,
    source: `${S000}, "one stream per app.*.*.*", 6 pods`,
  },
  "000.one-10k-r3-async-3": {
    config: "one stream · 10 KB · R3 file · async · 3 pods",
    text: "avg pub 628 msgs/s",
    value: 628,
    source: `${S000}, async publishers, 10 KB`,
  },
  "000.one-1k-r3-async-3": {
    config: "one stream · 1 KB · R3 file · async · 3 pods",
    text: "avg pub 1,810 msgs/s",
    value: 1810,
    source: `${S000}, async publishers, 1 KB`,
  },
  "000.one-1k-r3-sync-6-mem": {
    config: "one stream · 1 KB · R3 memory · sync · 6 pods",
    text: "avg pub 197, sub ~360 msgs/s",
    value: 197,
    sub: 360,
    source: `${S000}, "Memory vs file-based", in-memory`,
  },
  "000.one-1k-r3-sync-6": {
    config: "one stream · 1 KB · R3 file · sync · 6 pods",
    text: "avg pub 164, sub ~330 msgs/s",
    value: 164,
    sub: 330,
    source: `${S000}, "Memory vs file-based" and "Replication = 3" (the same runs)`,
  },
  "000.one-1k-r1-sync-6": {
    config: "one stream · 1 KB · R1 file · sync · 6 pods",
    text: "avg pub 173, sub ~320 msgs/s",
    value: 173,
    sub: 320,
    source: `${S000}, "No replication", sync`,
  },
  "000.one-512-r3-async-6": {
    config: "one stream · 512 B · R3 file · async · 6 pods",
    text: "avg pub 387 and 408 msgs/s (two series)",
    value: (387 + 408) / 2,
    source: `${S000}, 1M messages of 512 B, "same stream" (387) and "Replication = 3" (408)`,
  },
  "000.one-512-r1-async-6": {
    config: "one stream · 512 B · R1 file · async · 6 pods",
    text: "avg pub 332 msgs/s",
    value: 332,
    source: `${S000}, "No replication", 1M messages of 512 B`,
  },

  // Seed 001: the table's "msgs/sec (NATS Bench)" per cloud (4 CPU / 16 GB nodes, SSD), a range over runs.
  "001.push-group-5": {
    config: "5 sync pub / 5 sub, push consumer with deliver group, 1 KB",
    text: "Azure 4,130–4,313 · GCP 2,000–2,500 · AWS 3,441–4,289",
    value: (4130 + 4313 + 2000 + 2500 + 3441 + 4289) / 6,
    source: `${S001}, table, pub/sub 5/5`,
  },
  "001.push-group-1": {
    config: "1 sync pub / 5 sub, push consumer with deliver group, 1 KB",
    text: "Azure 1,630–2,682 · GCP 850–1,320 · AWS 1,739–2,071",
    value: (1630 + 2682 + 850 + 1320 + 1739 + 2071) / 6,
    source: `${S001}, table, pub/sub 1/5`,
  },

  // Seed 002: 1 publisher, 2 push subscribers on one durable, --dedup, 100,000 messages of 128 B, file.
  "002.dedup-r3": {
    config: "1 pub / 2 push sub, dedup, 128 B, R3 file",
    text: "Pub/Sub 87,742 · pub 44,342 · sub 43,871 msgs/s",
    value: 43871,
    source: `${S002}, TestReplicatedStream, R3`,
  },
  "002.dedup-r1": {
    config: "1 pub / 2 push sub, dedup, 128 B, R1 file",
    text: "Pub/Sub 115,989 · pub 58,034 · sub 57,996 msgs/s",
    value: 57996,
    source: `${S002}, Single Stream Benchmark, R1`,
  },
  "002.scale-1": { config: "1 consumer, dedup, 128 B, R3 file", text: "TPS (Sub) 43,071", value: 43071, source: `${S002}, consumer scaling table` },
  "002.scale-2": { config: "2 consumers, dedup, 128 B, R3 file", text: "TPS (Sub) 31,997", value: 31997, source: `${S002}, consumer scaling table` },
  "002.scale-4": { config: "4 consumers, dedup, 128 B, R3 file", text: "TPS (Sub) 31,295", value: 31295, source: `${S002}, consumer scaling table` },
  "002.scale-8": { config: "8 consumers, dedup, 128 B, R3 file", text: "TPS (Sub) 26,511", value: 26511, source: `${S002}, consumer scaling table` },
  "002.scale-16": { config: "16 consumers, dedup, 128 B, R3 file", text: "TPS (Sub) 23,131", value: 23131, source: `${S002}, consumer scaling table` },
  "002.scale-32": { config: "32 consumers, dedup, 128 B, R3 file", text: "TPS (Sub) 32,535", value: 32535, source: `${S002}, consumer scaling table` },
  "002.scale-64": { config: "64 consumers, dedup, 128 B, R3 file", text: "TPS (Sub) 35,041", value: 35041, source: `${S002}, consumer scaling table` },
  "002.kv-put": { config: "KV put, 1 putter, 128 B, R3 file", text: "14,257 msgs/s (1 putter, R3, file, 128 B)", value: 14257, source: `${S002}, KV Put` },
  "002.kv-watch": {
    config: "KV watch while putting",
    text: 'no figure: the watch printed every key; "watch uses a lot of memory"',
    source: `${S002}, KV Watch`,
  },

  // Seed 003: Avg / Min / Max as printed, unit not stated. V2 = async I/O, V1 = sync over async.
  "003.pipelined-0": { config: "pipelined (V2, async I/O), +0 ms", text: "V2 Avg 0.090 · Min 0.026 · Max 0.208", value: 0.09, source: `${S003}, no latency` },
  "003.sequential-0": {
    config: "sequential (V1, sync over async), +0 ms",
    text: "V1 Avg 0.066 · Min 0.045 · Max 0.122",
    value: 0.066,
    source: `${S003}, no latency`,
  },
  "003.pipelined-1": {
    config: "pipelined (V2, async I/O), +1 ms",
    text: "V2 Avg 0.101 · Min 0.035 · Max 0.170",
    value: 0.101,
    source: `${S003}, 1 ms on the interface (2 ms round trip)`,
  },
  "003.sequential-1": {
    config: "sequential (V1, sync over async), +1 ms",
    text: "V1 Avg 0.395 · Min 0.066 · Max 0.564",
    value: 0.395,
    source: `${S003}, 1 ms on the interface (2 ms round trip)`,
  },
  "003.pipelined-10": {
    config: "pipelined (V2, async I/O), +10 ms",
    text: "V2 Avg 0.199 · Min 0.124 · Max 0.345",
    value: 0.199,
    source: `${S003}, 10 ms on the interface (20 ms round trip)`,
  },
  "003.sequential-10": {
    config: "sequential (V1, sync over async), +10 ms",
    text: "V1 Avg 2.676 · Min 1.215 · Max 3.132",
    value: 2.676,
    source: `${S003}, 10 ms on the interface (20 ms round trip)`,
  },
};
