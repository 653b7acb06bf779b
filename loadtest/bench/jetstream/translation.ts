// The users' `nats bench` commands (an older natscli: one command for publishers and subscribers, flags for
// everything) in natscli v0.5.1's form (subcommands per role), flag by flag. Rendered into jetstream.md.

export type FlagTranslation = { old: string; now: string; note: string };

export const FLAG_TRANSLATION: readonly FlagTranslation[] = [
  {
    old: "`nats bench SUBJ --js --pub N --sub M`",
    now: "two commands run at once: `nats bench js pub sync|async SUBJ --clients N` and a consumer command with `--clients M`",
    note: "one process used to run both roles; now each role is a subcommand, started here consumers first",
  },
  {
    old: "`--js` (subscribers without `--push`/`--pull`)",
    now: "`nats bench js ordered --clients M`",
    note: "ephemeral ordered consumers, one per subscriber, each receives every message (the users' `--sub 10` got 10,000 each)",
  },
  {
    old: "`--push` (durable push consumer, subscribers in its deliver group)",
    now: "no push mode in v0.5.1: `nats bench js consume` (durable pull consumer, callback)",
    note: "the users' push consumer with deliver group is consumed here by nats.js instead (node-client.ts)",
  },
  { old: "`--pull`", now: "`nats bench js consume` (callback) or `nats bench js fetch`", note: "" },
  { old: "`--syncpub`", now: "`nats bench js pub sync`", note: "each publish awaits its ack" },
  {
    old: "(no `--syncpub`: async, `pubbatch=100`)",
    now: "`nats bench js pub async --batch 100`",
    note: "v0.5.1's default batch is 500; 100 keeps the users' old default",
  },
  { old: "`--pub=N`", now: "`--clients N` on `js pub`", note: "the messages are split over the clients, as before" },
  { old: "`--sub=M`", now: "`--clients M` on `js ordered` / `js consume`", note: "ordered: each client expects all `--msgs`; consume: split over the clients" },
  { old: "`--msgs=N`, `--size=S`, `--no-progress`", now: "unchanged (`--size` also takes `1KB`)", note: "" },
  { old: "`--stream=NAME`", now: "`--stream NAME` (a flag of `nats bench js`)", note: "default still `benchstream`" },
  {
    old: "`--replicas=R --storage=file|memory`",
    now: "the same flags on `js pub` / `kv put`, applied only when the bench creates the stream (`--create`)",
    note: "here every stream is made beforehand by `nats stream add`, as the users did",
  },
  {
    old: "`--consumer NAME --consumerbatch=10`",
    now: "`nats bench js consume --consumer NAME --batch 10`",
    note: "a consumer other than the default `nats-bench` must exist; seed 001's is made with `nats consumer add`",
  },
  { old: "`--dedup` (`dedupwindow=2m`)", now: "`--dedup` (`--dedupwindow 2m`) on `js pub`", note: "sets Nats-Msg-Id on every message" },
  { old: "`--purge`", now: "`--purge` on `js pub` / `js consume` / `js ordered`", note: "here each row starts on a stream created afresh instead" },
  {
    old: "`--kv --pub 1 --bucket=B` (subscribers did gets)",
    now: "`nats bench kv put --bucket B --clients 1` (gets: `nats bench kv get`)",
    note: "the users made their bucket with `nats kv add B` (defaults: 1 replica) before the bench's `--replicas=3`, which applies only to a bucket the bench creates; here the bucket is made with `--replicas 3` explicitly",
  },
  {
    old: "`--publishInterval=5000` (seed 000's 12-hour stability run, their `./natscli` build)",
    now: "`--sleep 5s` on `nats bench js`",
    note: "not a flag of released natscli; the stability run is not part of this evaluation",
  },
  { old: "`nats str add NAME --subjects … --replicas … --storage …`", now: "`nats stream add NAME …` with `--defaults` (no prompts)", note: "" },
  {
    old: "`nats con add sap test-consumer --deliver-group … --target … --max-pending 10 --flow-control --heartbeat 1m …`",
    now: "unchanged, plus `--defaults`",
    note: "nats-server 2.15.2 accepts flow control and heartbeats on a push consumer with a deliver group",
  },
  { old: "`nats kv add B`, `nats kv watch B`", now: "unchanged", note: "" },
];
