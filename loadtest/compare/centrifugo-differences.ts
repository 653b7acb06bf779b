// Why this gateway and Centrifugo v6 differ in a scenario of the side-by-side run (centrifugo.ts), printed under
// the report's table: each is documented in docs/centrifugo.md ("What differs").
export const EXPLAINED: Readonly<Record<string, string>> = {
  order:
    "both deliver every publication once and in order; the scenario also checks that offsets jump where another channel's messages sit between, which only the gateway does: its offsets are the stream's sequences, shared by the channels of a stream, where Centrifugo counts each channel's publications 1, 2, 3. No SDK tested assumes consecutive offsets (docs/centrifugo.md, Recovery from the whole stream).",
  "recover-3000":
    "Centrifugo recovers at most `client.recovery_max_publication_limit` publications (300 by default): 3,000 missed are more, so it answers `recovered: false` (with the stream's top offset, 3001) and the SDK must reload its state. The gateway pages every missed publication from the stream through the resume path. Expected, in the gateway's favour.",
  "worker-killed":
    "Centrifugo is one process: killing it is a restart, and its memory engine loses every channel's history, so the reconnecting SDK is told `recovered: false` (a new epoch). With its Redis engine history would survive, within `history_size`; the gateway's history is the JetStream stream, which outlives every worker, so it recovers.",
  epoch:
    "after its history was removed Centrifugo tells a live subscriber nothing within the scenario's 20 s: it finds the new epoch when the next publication reaches the subscriber (`insufficient state`, the SDK subscribes again and is told `recovered: false`; that publication is not delivered to it) or at a later position check. The gateway tells its subscribers at once when their stream is recreated, and they resubscribe before the next publication.",
};
