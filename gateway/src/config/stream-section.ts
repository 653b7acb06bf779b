/** The settings of one JetStream stream: the default one (STREAM_*), or a namespace's. */
export type StreamSection = Readonly<{
  name: string;
  subjectPrefix: string;
  livePrefix: string;
  storage: "file" | "memory";
  replicas: number;
  maxAgeMs: number;
  maxMsgsPerSubject: number;
  maxBytes: number;
  duplicateWindowMs: number;
  maxConsumers: number;
  update: boolean;
  /** The primary's look at the stream's setup after start (broker/jetstream/stream-watch.ts), and whether it repairs. */
  checkIntervalMs: number;
  repair: boolean;
  /** Per-message TTL (`Nats-TTL`, JetStream's allow_msg_ttl): namespace streams only; the default stream has none. */
  allowMsgTtl: boolean;
}>;
